/**
 * THE event lock of the operations that write an event's delivery rows (cancel, replay,
 * requeue — and the prune): the event rows, locked `FOR UPDATE` in primary-key order
 * inside the operation's transaction, before any of their rows is written.
 *
 * One order for everyone is what makes two callers whose events overlap queue rather than
 * deadlock: each takes the lowest event first, so the second waits there holding nothing
 * the first still needs. It is also what keeps a cancel issued while a replay of the event
 * is open from being overtaken: the cancel waits for the replay's commit, then withdraws
 * what it reopened. A relay's claim takes no event lock (it must stay one short statement),
 * so every write under this lock still carries its own status predicate.
 *
 * `ORDER BY` runs below the row locking, so the rows are locked in that order.
 */
import { type EventSelector, eventsInKeyOrder } from '../sql/operations.js';
import type { TableNames } from '../tables.js';
import { postgresDialect } from './dialect.js';

/**
 * Lock the events named by `$1` — uuids, sequences, or the delivery ids whose events they
 * are (see {@link EventSelector}) — in primary-key order. Returns `(sequence, uuid)` of
 * each, in that order; an id naming no event locks nothing.
 */
export function lockEventsSql(t: TableNames, by: EventSelector): string {
  return `${eventsInKeyOrder(t, postgresDialect, by)}
      FOR UPDATE OF e`;
}

/**
 * The prune's form of the same lock: the events whose sequences are bound at `$n` (a
 * `bigint[]`), locked in primary-key order. Returns their ids; an id with no row is
 * skipped. Reads the primary key.
 */
export function lockEventIdsSql(t: TableNames, n = 1): string {
  return `SELECT id FROM ${t.events} WHERE id = ANY($${n}::bigint[]) ORDER BY id FOR UPDATE`;
}
