import type { OutboxEvent } from '../../declare/types.js';
import { getBody, getHeaders, getKey } from '../message.js';

/**
 * The field names of a Redis Streams entry the transport writes, one per thing the
 * topic-outbox reference says the entry carries ("the event's id, topic, ordering key,
 * headers and payload as JSON"). Named here once, so a consumer (and the inbox adapter)
 * reads the same names the transport writes.
 *
 * - `id`: the event's UUIDv7, what a consumer deduplicates on (delivery is at least once).
 *   Not the entry's own stream id, which Redis assigns (`*`).
 * - `topic`: the event's name, also in the headers as `outbox-topic`.
 * - `ordering_key`: the ordering key; absent for an event without one.
 * - `headers`: a JSON object of strings: the event's headers plus `outbox-event-id` and
 *   `outbox-topic` (`getHeaders`).
 * - `payload`: the payload's JSON (`getBody`).
 */
export const REDIS_STREAM_FIELDS = {
  id: 'id',
  topic: 'topic',
  orderingKey: 'ordering_key',
  headers: 'headers',
  payload: 'payload',
} as const;

/**
 * The field/value list of the entry `XADD` writes for `event` (see
 * {@link REDIS_STREAM_FIELDS}), flat as Redis takes it: `[field, value, field, value, …]`.
 * Exported so a custom sender or a benchmark writes exactly what the transport writes.
 */
export function redisStreamFields(event: OutboxEvent): string[] {
  const f = REDIS_STREAM_FIELDS;
  const fields = [f.id, event.id, f.topic, event.name];
  const key = getKey(event);
  if (key !== null) fields.push(f.orderingKey, key);
  fields.push(f.headers, JSON.stringify(getHeaders(event)), f.payload, getBody(event));
  return fields;
}

/** An entry of the transport's stream, read back as a consumer sees it. */
export interface RedisStreamMessage {
  /** The event's UUIDv7 (the `id` field): what to deduplicate on. */
  readonly eventId: string;
  /** The event's name (the `topic` field). */
  readonly topic: string;
  /** The ordering key, or `null` when the entry has none. */
  readonly orderingKey: string | null;
  /** The headers, `outbox-event-id` and `outbox-topic` among them. */
  readonly headers: Readonly<Record<string, string>>;
  /** The payload, parsed from its JSON. */
  readonly payload: unknown;
}

/**
 * Read an entry the transport wrote (the flat field/value list `XRANGE` or `XREADGROUP`
 * returns for it) back into its parts, for a consumer.
 *
 * @throws Error naming the field when the entry lacks `id`, `topic` or `payload`, or its
 *   headers or payload are not JSON: it was not written by this transport.
 */
export function parseRedisStreamEntry(fields: readonly string[]): RedisStreamMessage {
  const values = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) values.set(fields[i], fields[i + 1]);
  const f = REDIS_STREAM_FIELDS;
  const required = (name: string) => {
    const value = values.get(name);
    if (value === undefined)
      throw new Error(`not an outboxkit stream entry: it has no "${name}" field`);
    return value;
  };
  const json = (name: string, text: string): unknown => {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new Error(`not an outboxkit stream entry: its "${name}" field is not JSON`, {
        cause: error,
      });
    }
  };
  const headers = values.has(f.headers) ? json(f.headers, values.get(f.headers)!) : {};
  return {
    eventId: required(f.id),
    topic: required(f.topic),
    orderingKey: values.get(f.orderingKey) ?? null,
    headers: headers as Record<string, string>,
    payload: json(f.payload, required(f.payload)),
  };
}
