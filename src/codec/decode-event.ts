import type { OutboxConfig } from '../declare/define-outbox.js';
import type { JsonValue, OutboxEvent } from '../declare/types.js';
import { formatConfigPath } from '../errors/config-path.js';
import {
  ConfigurationError,
  PayloadDecodeError,
  PayloadUpgradeFailed,
} from '../errors/outbox-error.js';
import type { StoredEvent } from '../storage/store.js';
import { decodeJson } from './json.js';
import type { PayloadCodec } from './payload-codec.js';
import { CODEC_HEADER, codecOfHeaders, rememberCodec } from './payload-codec.js';

/**
 * THE event decoder: turn a stored event row into the {@link OutboxEvent} receivers see.
 * The relay, `fire()`'s idempotent re-read and `assertFired` all decode through here, so
 * a row that no longer decodes fails the same way everywhere.
 *
 * The JSON is parsed, then the declared schema runs over the payload, so a payload that no
 * longer round-trips fails here (in the relay: an ordinary, counted failure) rather than
 * deep inside a receiver. An event no longer declared (a wildcard receiver's) is returned
 * raw.
 *
 * The codec is the one the row was written with, read from its `outbox-codec` header
 * (none: `json`), never today's declaration: a row written before the event changed codec
 * decodes with its own (src/codec/payload-codec.ts). A codec the outbox does not know (one
 * of the app's not declared in `defineOutbox({ codecs })` in this process) is a
 * {@link PayloadDecodeError} naming it, never a silent decode as JSON.
 *
 * Versions, by the row's version against the declared one:
 *
 * - **older, with `upgrade`**: the stored JSON goes through `upgrade(payload, fromVersion)`
 *   first, and the schema decodes what it returns. The event's `version` is then the
 *   declared one: it says which shape `payload` has, and after the hook that is the
 *   current shape. A hook that throws (or returns a promise: it must be synchronous) raises
 *   {@link PayloadUpgradeFailed}, which the relay dead-letters at once.
 * - **older, without `upgrade`**: decoded as it is, keeping its stored `version`; it dead-
 *   letters only once a breaking change stops it decoding (a {@link PayloadDecodeError}).
 * - **newer** (a rolling deploy: a new process fired it, an old relay claimed it): decoded
 *   with the current schema as it is, keeping its stored `version`. No hook can downgrade,
 *   so a payload this schema refuses is an ordinary, retried `PayloadDecodeError`: the
 *   retry lands once a relay of the new version runs (give `maxAttempts` room for a
 *   deploy's length).
 *
 * @throws {PayloadDecodeError} naming the event, its version and the path at fault.
 * @throws {PayloadUpgradeFailed} naming the event, both versions and what the hook said.
 */
export function decodeEvent(config: OutboxConfig, stored: StoredEvent): OutboxEvent {
  const json = parseColumn(stored.payload, stored, 'payload');
  const headers = parseColumn(stored.headers, stored, 'headers') ?? {};
  if (typeof headers !== 'object' || Array.isArray(headers)) {
    throw new PayloadDecodeError(
      `stored headers of ${named(stored)} are not an object of name → JSON value (got ${JSON.stringify(headers)})`,
      { eventName: stored.name, version: stored.version, eventId: stored.uuid, path: 'headers' },
    );
  }
  // The codec the row was WRITTEN with (its header), never today's declaration's.
  const codec = CODEC_HEADER in headers ? codecOf(config, headers, stored) : undefined;
  const raw = codec ? decodeWithCodec(codec, json, stored) : json;
  const declared = config.route(stored.name)?.event;
  let payload: unknown = raw;
  let version = stored.version;
  if (declared) {
    let input: unknown = raw;
    if (declared.upgrade && stored.version < declared.version) {
      input = upgradePayload(declared.upgrade, raw as JsonValue, stored, declared.version);
      version = declared.version;
    }
    const parsed = declared.schema.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = formatConfigPath(['payload', ...issue.path]);
      const where = issue.path.length > 0 ? issue.path.join('.') : 'payload';
      const upgraded = version !== stored.version ? ` once upgraded to v${version}` : '';
      throw new PayloadDecodeError(
        `stored payload of ${named(stored)} no longer decodes${upgraded}: ${where} ${issue.message}`,
        {
          eventName: stored.name,
          version: stored.version,
          eventId: stored.uuid,
          path,
          cause: parsed.error,
        },
      );
    }
    payload = parsed.data;
  }
  const event: OutboxEvent = {
    id: stored.uuid,
    sequence: stored.sequence,
    name: stored.name,
    version,
    payload,
    headers: headers as Record<string, JsonValue>,
    orderingKey: stored.orderingKey,
    idempotencyKey: stored.idempotencyKey,
    occurredAt: stored.occurredAt,
    recordedAt: stored.recordedAt,
    actor: stored.actor,
    correlationId: stored.correlationId,
    causedBy: stored.causedBy,
    tenant: stored.tenant,
    ...(stored.columns ? { columns: stored.columns } : {}),
  };
  // getBody(event) re-encodes with the codec of the app's the event was read with.
  if (codec) rememberCodec(headers, codec);
  return event;
}

/** Run an event's `upgrade` hook over a stored payload; its failure is named, never raw. */
function upgradePayload(
  upgrade: (payload: JsonValue, fromVersion: number) => unknown,
  raw: JsonValue,
  stored: StoredEvent,
  toVersion: number,
): unknown {
  const failed = (reason: string, cause?: unknown) =>
    new PayloadUpgradeFailed({
      eventName: stored.name,
      fromVersion: stored.version,
      toVersion,
      eventId: stored.uuid,
      reason,
      cause,
    });
  let upgraded: unknown;
  try {
    upgraded = upgrade(raw, stored.version);
  } catch (error) {
    throw failed(error instanceof Error ? error.message : String(error), error);
  }
  if (
    typeof upgraded === 'object' &&
    upgraded !== null &&
    typeof (upgraded as { then?: unknown }).then === 'function'
  ) {
    // A rejected promise nobody awaits would be an unhandled rejection: observe it.
    (upgraded as Promise<unknown>).then(undefined, () => {});
    throw failed('the hook returned a promise; upgrade must be synchronous');
  }
  return upgraded;
}

/**
 * The codec a row's header names, among the outbox's. One it does not have fails the
 * delivery attempt (an ordinary, counted failure: a relay of a deploy that declares the
 * codec decodes the row on a later attempt), and is never decoded as JSON instead.
 */
function codecOf(config: OutboxConfig, headers: object, stored: StoredEvent): PayloadCodec {
  const codec = codecOfHeaders(headers as Record<string, unknown>, config.codecs);
  if (codec) return codec;
  const name = (headers as Record<string, unknown>)[CODEC_HEADER];
  const known = [...config.codecs.keys()].map((n) => `"${n}"`).join(', ');
  throw new PayloadDecodeError(
    `stored payload of ${named(stored)} was written with codec ${JSON.stringify(name)}, which this outbox does not know (it knows ${known}); declare that codec in defineOutbox({ codecs }) in every process that reads these events`,
    { eventName: stored.name, version: stored.version, eventId: stored.uuid, path: 'headers' },
  );
}

/** The payload of a row written by a codec other than json, as its codec reads it back. */
function decodeWithCodec(codec: PayloadCodec, json: unknown, stored: StoredEvent): unknown {
  try {
    return codec.decode(json);
  } catch (error) {
    if (error instanceof ConfigurationError) throw error; // superjson not installed: say so
    throw new PayloadDecodeError(
      `stored payload of ${named(stored)} does not decode with its codec ${codec.name}: ${(error as Error).message}`,
      {
        eventName: stored.name,
        version: stored.version,
        eventId: stored.uuid,
        path: 'payload',
        cause: error,
      },
    );
  }
}

/**
 * How an error names the stored event: made only when one is thrown (the relay decodes
 * every claimed row, and a string built per row for errors that almost never come is
 * garbage on its hot path).
 */
function named(stored: StoredEvent): string {
  return `${stored.name} v${stored.version} (event ${stored.uuid})`;
}

function parseColumn(value: unknown, stored: StoredEvent, path: string): unknown {
  try {
    return decodeJson(value);
  } catch (error) {
    throw new PayloadDecodeError(
      `stored ${path} of ${named(stored)} is not valid JSON: ${(error as Error).message}`,
      { eventName: stored.name, version: stored.version, eventId: stored.uuid, path, cause: error },
    );
  }
}
