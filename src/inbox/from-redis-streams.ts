import { REDIS_STREAM_FIELDS } from '../transports/redis-streams/entry.js';
import { checkMessage, describe, type InboxMessage } from './message.js';
import { missingEventId } from './missing-id.js';

/**
 * A Redis Streams entry as a consumer holds it: the flat field/value list `XRANGE` and
 * `XREADGROUP` return for an entry, the `[entryId, fields]` pair they return it in, or the
 * entry already read with `parseRedisStreamEntry` (its `eventId`).
 */
export type RedisStreamEntryLike =
  | readonly string[]
  | readonly [entryId: string, fields: readonly string[]]
  | { readonly eventId: string; readonly topic?: string | null };

/**
 * The inbox message of an entry our `redisStreams()` transport added: the event id from
 * its `id` field (not the entry's own stream id, which Redis assigns, so a replayed event
 * has a new one), the topic from its `topic` field (see `REDIS_STREAM_FIELDS`).
 *
 * ```ts
 * for (const [entryId, fields] of entries) {
 *   await orders.handle(fromRedisStreams(fields), (transaction) => …);
 *   await redis.xack(stream, group, entryId);
 * }
 * ```
 * @throws {ValidationError} for an entry without an `id` field.
 */
export function fromRedisStreams(entry: RedisStreamEntryLike): InboxMessage {
  const where = 'fromRedisStreams(entry)';
  if (Array.isArray(entry)) {
    const fields: readonly unknown[] =
      entry.length === 2 && Array.isArray(entry[1]) ? (entry[1] as unknown[]) : entry;
    const values = new Map<string, unknown>();
    for (let i = 0; i + 1 < fields.length; i += 2) values.set(String(fields[i]), fields[i + 1]);
    const id = values.get(REDIS_STREAM_FIELDS.id);
    if (typeof id !== 'string' || id === '') {
      const names = [...values.keys()].slice(0, 20).join(', ');
      throw missingEventId(
        where,
        `no "${REDIS_STREAM_FIELDS.id}" field; its fields: ${names || 'none'}`,
      );
    }
    const topic = values.get(REDIS_STREAM_FIELDS.topic);
    return checkMessage(where, { id, topic: typeof topic === 'string' ? topic : null });
  }
  if (typeof entry === 'object' && entry !== null && 'eventId' in entry) {
    return checkMessage(where, { id: entry.eventId, topic: entry.topic ?? null });
  }
  throw missingEventId(
    where,
    `expected the entry's field list, its [entryId, fields] pair or a parsed entry; got ${describe(entry)}`,
  );
}
