/**
 * The advisory locks that serialise the writers of an ordering key on PostgreSQL.
 *
 * A key's events must commit in sequence order, or the relay (which reads committed rows
 * only) could deliver a later event of the key before an earlier one that committed late.
 * So a writer of key K takes a transaction-scoped advisory lock that every other writer of
 * K also takes, and holds it until it commits or rolls back.
 *
 * One lock per distinct key overflowed the shared lock table ("out of shared memory",
 * which aborts the caller's transaction) for a `fireMany` of 20,000 keys: PostgreSQL's
 * lock table holds about max_locks_per_transaction x max_connections entries (6,400 by
 * default) for the whole server. Keys are therefore hashed into {@link KEY_LOCK_SLOTS}
 * slots, and a writer locks the slots of its keys: the slot is a pure function of the key
 * (the low bits of `hashtext(key)`), so every writer of a key takes the same lock.
 */
import type { TableNames } from '../tables.js';

/**
 * How many lock slots the ordering keys of one outbox share: the most advisory locks one
 * transaction takes for its keys, however many it writes (a slot already held is not taken
 * again). 256 keeps the worst case a small share of the server's lock table even with a
 * few dozen large `fireMany` transactions at once, while two single-key writers share a
 * slot (and queue) only once in 256 pairs. A power of two: the slot is `hashtext(k) & 255`.
 */
export const KEY_LOCK_SLOTS = 256;

/**
 * The advisory-lock space of one outbox's ordering keys, the first int of
 * `pg_advisory_xact_lock(int, int)`: a 32-bit hash of its deliveries table, so outboxes in
 * other schemas or with other prefixes never queue behind each other's keys.
 */
export function keyLockSpace(t: TableNames): number {
  let h = 0;
  for (const ch of `outboxkit:${t.deliveries}`) h = (Math.imul(h, 31) + ch.charCodeAt(0)) | 0;
  return h;
}

/**
 * SQL that takes the slot locks of the ordering keys in the text array `keysParam`, one
 * row per slot, in ascending slot order: two statements locking overlapping slots take
 * them in the same order, so they queue rather than deadlock. NULL keys take none.
 */
export function keySlotLocks(t: TableNames, keysParam: string): string {
  return `SELECT pg_advisory_xact_lock(${keyLockSpace(t)}, slot)
        FROM (SELECT DISTINCT ${slotOf('k')} AS slot
              FROM unnest(${keysParam}) AS k WHERE k IS NOT NULL ORDER BY slot) AS slots`;
}

/**
 * {@link keySlotLocks} for one key, the text expression `keyParam` (one event's insert):
 * the same lock of the same slot, none for a NULL key, without unnesting an array.
 */
export function keySlotLock(t: TableNames, keyParam: string): string {
  return `SELECT pg_advisory_xact_lock(${keyLockSpace(t)}, ${slotOf(keyParam)})
        WHERE ${keyParam} IS NOT NULL`;
}

/** The lock slot of the ordering key `key`, an SQL text expression. */
const slotOf = (key: string): string => `hashtext(${key}) & ${KEY_LOCK_SLOTS - 1}`;
