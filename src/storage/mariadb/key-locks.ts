/**
 * The ordering keys' locks on MariaDB: what PostgreSQL's advisory slot locks are
 * (postgres/key-locks.ts), as row locks on a table of slots. A transaction that fires
 * events with an ordering key first locks the slots of its keys (`SELECT … FOR UPDATE`, in
 * ascending order, so two writers queue rather than deadlock), before any event id is drawn:
 * a second transaction firing the same key waits until the first commits or rolls back, so
 * a key's event ids follow its commit order and the relay, which reads committed rows only,
 * never delivers a later event of a key before an earlier one that committed late. A row
 * lock, unlike `GET_LOCK()`, ends with the caller's transaction, whoever ends it.
 *
 * Keys map to {@link KEY_LOCK_SLOTS} slots by a hash computed here (FNV-1a of the UTF-8
 * bytes), the same in every process; two keys sharing a slot only queue behind each other.
 */
import { quoteIdent, type TableNames } from '../tables.js';

/** How many slots the keys share: at most this many row locks per transaction. */
export const KEY_LOCK_SLOTS = 256;

/** The slots table of these tables. */
export function keyLocksTable(t: TableNames): string {
  return quoteIdent(`${t.prefix}key_locks`);
}

/** The slot of an ordering key. */
export function keySlot(key: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(key, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % KEY_LOCK_SLOTS;
}

/** The distinct slots of these keys, ascending (the order they are locked in). */
export function keySlots(keys: readonly (string | null)[]): number[] {
  const slots = new Set<number>();
  for (const key of keys) if (key !== null) slots.add(keySlot(key));
  return [...slots].sort((a, b) => a - b);
}

/** Lock the slots bound at `$1` (a JSON list), ascending. */
export function lockSlotsSql(t: TableNames): string {
  return `SELECT slot FROM ${keyLocksTable(t)}
      WHERE slot IN (SELECT l.v FROM JSON_TABLE($1, '$[*]' COLUMNS (v INT PATH '$')) AS l)
      ORDER BY slot FOR UPDATE`;
}
