import type { PayloadCodec } from '../codec/payload-codec.js';
import type { ResolvedEvent } from '../declare/event.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import {
  canonical,
  opaqueBodyJsonSchema,
  payloadJsonSchema,
  superjsonBodyJsonSchema,
} from './payload-schema.js';

/**
 * The JSON Schema of an event's message body as its codec writes it — what the row stores,
 * what `getBody(event)` sends and so what a consumer parses — published as the catalogue
 * event's `schema` (and `fields`, and the AsyncAPI message payload):
 *
 * - `json`: the payload's JSON (dates as ISO text, bigints as decimal text);
 * - `superjson`: superjson's `{ json, meta }` document around the payload's JSON;
 * - a codec of the app's: what its `bodySchema(schema)` hook says, else an opaque body
 *   (only the codec knows the shape of what it writes; a guess from the payload's schema
 *   would be a schema consumers could not trust).
 *
 * @param codec the event's codec (`config.codecs.get(event.codec)`); undefined reads as json.
 * @throws {ConfigurationError} naming the event when its schema cannot be described, or
 * when a codec's `bodySchema` throws or returns no object.
 */
export function bodyJsonSchema(
  event: ResolvedEvent,
  codec: PayloadCodec | undefined,
): Readonly<Record<string, unknown>> {
  const name = codec?.name ?? 'json';
  if (name === 'json') return payloadJsonSchema(event.name, event.schema);
  if (name === 'superjson') return superjsonBodyJsonSchema(event.name, event.schema);
  if (!codec?.bodySchema) return opaqueBodyJsonSchema(name);
  let schema: unknown;
  try {
    schema = codec.bodySchema(event.schema);
  } catch (error) {
    throw new ConfigurationError(
      `the payload codec "${name}" cannot describe the body of events["${event.name}"] for the catalogue: its bodySchema threw (${(error as Error).message})`,
      { path: `events["${event.name}"].codec`, cause: error },
    );
  }
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new ConfigurationError(
      `the payload codec "${name}" bodySchema returned ${JSON.stringify(schema)} for events["${event.name}"]; return a JSON Schema object`,
      { path: `events["${event.name}"].codec` },
    );
  }
  return canonical(schema) as Readonly<Record<string, unknown>>;
}
