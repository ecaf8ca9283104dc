/**
 * The payload codec seam (the domain-events reference's `PayloadCodec`): how a payload, as
 * its zod schema parsed it, becomes the JSON the row stores, and comes back before the
 * schema decodes it. The schema stays the one declaration of the payload's shape; the
 * codec only decides which values survive the trip.
 *
 * Two built-in codecs, and any of your own declared on the outbox
 * (`defineOutbox({ codecs: [myCodec] })`), chosen by name per event (`event({ codec })`)
 * or per outbox (`settings.codec`):
 *
 * - **`json`** (the default): the exact JSON codec of ./json.ts — refuses, never changes,
 *   a value JSON cannot hold; a `Date` is stored as ISO text (declare `z.coerce.date()`).
 * - **`superjson`**: superjson's `{ json, meta }` document, so a `Date`, a `bigint`, a
 *   `Map`, a `Set`, `undefined` in an array, `NaN` or a `RegExp` come back as themselves
 *   (`z.date()`, `z.map()`… decode). superjson is an optional peer, loaded on the first
 *   superjson payload (never by `import 'outboxkit'`).
 * - **your own**: a {@link PayloadCodec} object, declared ONCE on the outbox rather than
 *   handed to the events that use it, because a row is decoded by the codec name it
 *   recorded, not by today's declaration: a codec declared on the outbox stays known to
 *   every process loading the config after the last event naming it moved on, so the rows
 *   it wrote keep decoding; and one name means one codec, checked once.
 *
 * HOW A ROW RECORDS ITS CODEC: a row written by a codec other than `json` carries the
 * header {@link CODEC_HEADER} (`outbox-codec: superjson`) in its `headers` column, and
 * the decoder reads the codec from the row, never from today's config — so a row decodes
 * with the codec it was written with even after the event's declaration changed codec,
 * and a `json` row (every row written before codecs existed) needs no header. A header
 * rather than a column: a column would be a schema change on every dialect, and the
 * header travels with the event to transports (a consumer learns from the message how to
 * decode its body) and to `OutboxEvent.headers`, where it is visible and reserved: `fire()`
 * refuses a header of that name.
 */
import { createRequire } from 'node:module';
import type { z } from 'zod';
import { ConfigurationError, ValidationError } from '../errors/outbox-error.js';
import { type EncodedJson, encodeJsonValue } from './json.js';

/** The header a row written by a codec other than `json` names it in. */
export const CODEC_HEADER = 'outbox-codec';

/** A JSON Schema (draft 2020-12) node, as the catalogue publishes it. */
export type JsonSchemaObject = Readonly<Record<string, unknown>>;

/**
 * How a payload becomes the stored JSON, and comes back (the domain-events reference's
 * `PayloadCodec`): the seam between an event's zod schema, which says WHAT the payload
 * is, and the row, which holds JSON. Implement it to store values JSON cannot hold your
 * own way (a `Decimal`, a date as epoch milliseconds), and declare it once on the outbox:
 * `defineOutbox({ codecs: [myCodec] })`, then name it per event (`event({ codec: 'mine' })`)
 * or per outbox (`settings.codec`).
 *
 * A codec must be a pure, synchronous function pair that agrees with itself across
 * processes and deploys: the relay that decodes a row may run another version of your
 * code than the process that fired it, hours later. Its `name` is written on every row it
 * encodes (the `outbox-codec` header), so renaming a codec strands its rows: keep the old
 * name declared as long as rows written with it may be read (retention, replay).
 *
 * A transport's message body is the codec's document too (`getBody(event)` is
 * `encode(payload)`), and the `outbox-codec` header tells the consumer which codec wrote it.
 */
export interface PayloadCodec {
  /**
   * The name rows, message headers and the catalogue record: `json`, `superjson`, or your
   * codec's (letters, digits and `_ . -`, up to 100 characters; the built-in names are
   * taken).
   */
  readonly name: string;
  /**
   * The stored JSON text of a payload (as its schema parsed it); `reshaped` when a reader
   * could see another shape than was passed, so `fire()` checks the schema still accepts
   * what the relay will decode. Build the text with `encodeJsonValue` to hold it to what
   * every database stores (it refuses a NUL or a lone surrogate PostgreSQL's jsonb cannot
   * store, naming the path).
   *
   * @param root the value's name in messages and paths (`payload`).
   * @throws {ValidationError} naming the path of a value the codec cannot store: `fire()`
   * refuses the payload with it, before anything is written.
   */
  encode(payload: unknown, root: string): EncodedJson;
  /**
   * The payload from its stored JSON (already parsed), before the schema decodes it. A
   * throw fails the delivery with a `PayloadDecodeError` naming the codec and the event.
   */
  decode(stored: unknown): unknown;
  /**
   * The JSON Schema of the message body this codec writes for a payload of `schema` (what
   * a consumer receives: `getBody(event)`), published as the event's `schema` and `fields`
   * in the catalogue and as its message payload in the AsyncAPI document. Optional: a codec
   * without it is published as an opaque body (`{}`, no fields), since only the codec knows
   * the shape of what it writes. `z.toJSONSchema(schema, { io: 'input' })` is a start. The
   * built-in codecs have none: the catalogue describes their bodies itself
   * (src/introspect/body-schema.ts).
   */
  bodySchema?(schema: z.ZodType): JsonSchemaObject;
}

/** The exact JSON codec (./json.ts): the default. */
export const jsonCodec: PayloadCodec = {
  name: 'json',
  encode: encodeJsonValue,
  decode: (stored) => stored,
};

/** What the superjson codec uses of the package. */
interface Superjson {
  serialize(value: unknown): { json: unknown; meta?: unknown };
  deserialize(document: { json: unknown; meta?: unknown }): unknown;
}

const require = createRequire(import.meta.url);
let superjson: Superjson | undefined;

/**
 * superjson, loaded on first use: an optional peer (an ES module, which Node ≥ 20.19
 * requires synchronously, so encoding and decoding stay synchronous functions).
 *
 * @throws {ConfigurationError} saying how to install it when it is missing.
 */
function loadSuperjson(): Superjson {
  if (superjson) return superjson;
  let module: Superjson & { default?: Superjson };
  try {
    module = require('superjson') as Superjson & { default?: Superjson };
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown } | null;
    if (e?.code === 'MODULE_NOT_FOUND' && String(e.message).includes("'superjson'")) {
      throw new ConfigurationError(
        "the superjson payload codec needs the superjson package, which is not installed: run `npm install superjson@^2` (or declare the event with codec: 'json')",
        { cause: error },
      );
    }
    throw error;
  }
  superjson = typeof module.serialize === 'function' ? module : module.default!;
  return superjson;
}

/** What a superjson refusal adds: superjson carries more than JSON, but not everything. */
const SUPERJSON_HINT =
  ' (superjson carries Date, bigint, Map, Set, undefined, NaN and RegExp, and a class only once registered with SuperJSON.registerClass); nothing was written';

/**
 * The superjson codec: the stored payload is superjson's document `{ json, meta }` (`meta`
 * left out when nothing needed it), its `json` part held to the JSON codec's refusals, so
 * what superjson leaves as it is and JSON cannot hold (an instance of a class superjson
 * was not told about, a NUL or a lone surrogate PostgreSQL's jsonb cannot store) is
 * refused, naming its path in the payload. Always `reshaped`, so `fire()` checks that the
 * schema takes back what superjson will return.
 */
export const superjsonCodec: PayloadCodec = {
  name: 'superjson',
  encode(payload, root) {
    const { json, meta } = loadSuperjson().serialize(payload);
    try {
      // The document's `json` part is held to the JSON codec's refusals, named by the
      // payload's own paths (`payload.price`, not `payload.json.price`).
      const text = encodeJsonValue(json, root).text;
      if (meta === undefined) return { text: `{"json":${text}}`, reshaped: true };
      return { text: `{"json":${text},"meta":${JSON.stringify(meta)}}`, reshaped: true };
    } catch (error) {
      if (error instanceof ValidationError) {
        throw new ValidationError(
          error.message.replace(/; nothing was written$/, '') + SUPERJSON_HINT,
          {
            path: error.path,
            cause: error.cause,
          },
        );
      }
      throw error;
    }
  },
  decode(stored) {
    if (typeof stored !== 'object' || stored === null || !('json' in stored)) {
      throw new TypeError('the stored payload is not a superjson document { json, meta }');
    }
    return loadSuperjson().deserialize(stored as { json: unknown; meta?: unknown });
  },
};

/** The codecs every outbox knows, by name. */
export const BUILTIN_CODECS: ReadonlyMap<string, PayloadCodec> = new Map([
  ['json', jsonCodec],
  ['superjson', superjsonCodec],
]);

/** The built-in codec of this name, or undefined (a codec of the app's, or none). */
export function codecNamed(name: string): PayloadCodec | undefined {
  return BUILTIN_CODECS.get(name);
}

/**
 * The codec a stored event's headers name, among `codecs` (an outbox's: the built-in ones
 * and those it declares): {@link CODEC_HEADER}, else `json` (rows written by the default
 * codec carry no header). `undefined` for a name `codecs` does not hold.
 */
export function codecOfHeaders(
  headers: Readonly<Record<string, unknown>>,
  codecs: ReadonlyMap<string, PayloadCodec> = BUILTIN_CODECS,
): PayloadCodec | undefined {
  const name = headers[CODEC_HEADER];
  if (name === undefined) return jsonCodec;
  return typeof name === 'string' ? codecs.get(name) : undefined;
}

/**
 * The codec of the app's each event's headers name (see {@link rememberCodec}):
 * `getBody(event)` has only the event, and re-encodes its payload with the codec its
 * header names — a built-in one by name, any other by this record. Keyed weakly by the
 * event's HEADERS OBJECT, which `fire()` makes when it adds the codec's header and the
 * decoder makes when it reads a row, and which every copy of the event (`{ ...event }`)
 * shares; it holds nothing once the event is gone.
 */
const WRITTEN_WITH = new WeakMap<object, PayloadCodec>();

/**
 * Record that the event whose `headers` these are is written with `codec` (a codec of the
 * app's; built-ins go by name).
 */
export function rememberCodec(headers: object, codec: PayloadCodec): void {
  if (BUILTIN_CODECS.get(codec.name) !== codec) WRITTEN_WITH.set(headers, codec);
}

/** The codec of the app's {@link rememberCodec} recorded for an event's `headers`, if any. */
export function rememberedCodec(headers: object): PayloadCodec | undefined {
  return WRITTEN_WITH.get(headers);
}
