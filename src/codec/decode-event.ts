import { formatConfigPath } from '../declare/config-path.js';
import type { OutboxConfig } from '../declare/define-outbox.js';
import type { JsonValue, OutboxEvent } from '../declare/types.js';
import { PayloadDecodeError } from '../errors/outbox-error.js';
import type { StoredEvent } from '../storage/store.js';
import { decodeJson } from './json.js';

/**
 * THE event decoder: turn a stored event row into the {@link OutboxEvent} receivers see.
 * The relay, `fire()`'s idempotent re-read and `assertFired` all decode through here, so
 * a row that no longer decodes fails the same way everywhere.
 *
 * The JSON is parsed, then the declared schema runs over the payload, so a payload that no
 * longer round-trips fails here (in the relay: an ordinary, counted failure) rather than
 * deep inside a receiver. An event no longer declared (a wildcard receiver's) is returned
 * raw. This is where `upgrade` of older versions will land: the version is read here.
 *
 * @throws {PayloadDecodeError} naming the event, its version and the path at fault.
 */
export function decodeEvent(config: OutboxConfig, stored: StoredEvent): OutboxEvent {
  const at = `${stored.name} v${stored.version} (event ${stored.uuid})`;
  const raw = parseColumn(stored.payload, stored, 'payload', at);
  const headers = parseColumn(stored.headers, stored, 'headers', at) ?? {};
  if (typeof headers !== 'object' || Array.isArray(headers)) {
    throw new PayloadDecodeError(
      `stored headers of ${at} are not an object of name → JSON value (got ${JSON.stringify(headers)})`,
      { eventName: stored.name, version: stored.version, eventId: stored.uuid, path: 'headers' },
    );
  }
  const schema = config.route(stored.name)?.event.schema;
  let payload: unknown = raw;
  if (schema) {
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = formatConfigPath(['payload', ...issue.path]);
      const where = issue.path.length > 0 ? issue.path.join('.') : 'payload';
      throw new PayloadDecodeError(
        `stored payload of ${at} no longer decodes: ${where} ${issue.message}`,
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
  return {
    id: stored.uuid,
    sequence: stored.sequence,
    name: stored.name,
    version: stored.version,
    payload,
    headers: headers as Record<string, JsonValue>,
    orderingKey: stored.orderingKey,
    idempotencyKey: stored.idempotencyKey,
    occurredAt: stored.occurredAt,
    recordedAt: stored.recordedAt,
  };
}

function parseColumn(value: unknown, stored: StoredEvent, path: string, at: string): unknown {
  try {
    return decodeJson(value);
  } catch (error) {
    throw new PayloadDecodeError(
      `stored ${path} of ${at} is not valid JSON: ${(error as Error).message}`,
      { eventName: stored.name, version: stored.version, eventId: stored.uuid, path, cause: error },
    );
  }
}
