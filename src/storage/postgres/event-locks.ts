/**
 * THE event lock of the operations that change what an event owes or whether it exists:
 * cancel, replay, requeue and prune each lock the events of a batch first, `FOR UPDATE`
 * in primary-key order, so two of them over overlapping events queue rather than
 * deadlock, and a prune's re-check that an event is still due runs after any of them that
 * got there first has committed. The relay's claim takes no event lock (its writes carry
 * their own status predicates).
 */
import type { TableNames } from '../tables.js';

/**
 * Lock the events of the list bound at `$n` (a `bigint[]`), in primary-key order.
 * Returns their ids; an id with no row is skipped. Reads the primary key.
 */
export function lockEventsSql(t: TableNames, n = 1): string {
  return `SELECT id FROM ${t.events} WHERE id = ANY($${n}::bigint[]) ORDER BY id FOR UPDATE`;
}
