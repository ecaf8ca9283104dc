/**
 * The statements of `outbox.health()` and `outbox.quietReceivers()`, written once for every
 * dialect. Both are read-only and run outside any transaction. Neither reads history: the
 * health reads the owed rows (the partial index deliveries_queue) and the dead ones
 * (deliveries_dead_letters), the quiet receivers one index probe per declared receiver; so
 * their cost follows the backlog and the registry, not how much the tables have ever held.
 */
import type { TableNames } from '../tables.js';
import { tenantMatchSql } from './claim-filter.js';
import type { RowColumn, SqlDialect } from './dialect.js';

/** The one column of the receiver keys bound to {@link lastSucceededSql}. */
export const RECEIVER_KEY_COLUMNS: readonly RowColumn<string>[] = [
  { name: 'receiver_key', type: 'text', value: (key) => key },
];

/**
 * The backlog per receiver at `$1` (now): one row per receiver key with anything owed,
 * scheduled or dead, with (owed, oldest_owed_at, scheduled, claimed, lapsed, dead).
 *
 * - owed: pending, failed or claimed with its due time come (`due_at` NULL or ≤ $1);
 * - oldest_owed_at: the earliest of the owed rows' `due_at`, or their event's
 *   `recorded_at` where `due_at` is NULL — never `available_at`, which a backoff pushes
 *   ahead while a receiver fails;
 * - scheduled: pending, failed or claimed with `due_at` still ahead of $1 (not owed, not aged);
 * - claimed: the owed rows a worker holds; lapsed: claimed rows whose lease ended by $1;
 * - dead: dead letters.
 *
 * The owed rows are read saying the predicate of their partial index, deliveries_queue (owed
 * rows only), never history. The event's `recorded_at` is a primary-key probe made only
 * for a row without a due time (a correlated subquery, never a join that could scan the
 * events). The second branch reads the dead rows (deliveries_dead_letters).
 */
export function healthSql(
  t: TableNames,
  d: SqlDialect,
  ofTenant = false,
  ofEvents = false,
): string {
  const now = d.param(1, 'timestamp');
  // One tenant's rows (`health({ tenant })`): $2 a list of its name, each row's event read
  // through the events' primary key, as a relay's tenants are. The rows of some events
  // (`health({ columns })`, resolved to events): the list of their sequences after it.
  const tenant = (row: string) =>
    `${ofTenant ? ` AND ${tenantMatchSql(t, d, row, 2)}` : ''}${
      ofEvents ? ` AND ${d.inList(`${row}.event_id`, ofTenant ? 3 : 2, 'bigint')}` : ''
    }`;
  const come = `(o.due_at IS NULL OR o.due_at <= ${now})`;
  const owedRows = (where: string) => `
      SELECT o.receiver_key,
             CASE WHEN ${come} THEN 1 ELSE 0 END AS owed,
             CASE WHEN o.due_at IS NULL
                  THEN (SELECT e.recorded_at FROM ${t.events} e WHERE e.id = o.event_id)
                  WHEN o.due_at <= ${now} THEN o.due_at END AS owed_since,
             CASE WHEN ${come} THEN 0 ELSE 1 END AS scheduled,
             CASE WHEN o.status = 'claimed' AND ${come} THEN 1 ELSE 0 END AS claimed,
             CASE WHEN o.status = 'claimed' AND o.lease_until <= ${now} THEN 1 ELSE 0 END AS lapsed,
             0 AS dead
      FROM ${t.deliveries} o
      WHERE ${where}`;
  return `
    SELECT receiver_key, SUM(owed) AS owed, MIN(owed_since) AS oldest_owed_at,
           SUM(scheduled) AS scheduled, SUM(claimed) AS claimed, SUM(lapsed) AS lapsed,
           SUM(dead) AS dead
    FROM (${owedRows(`${d.ddl.phase.owed('o')}${tenant('o')}`)}
      UNION ALL
      SELECT x.receiver_key, 0, NULL, 0, 0, 0, count(*)
      FROM ${t.deliveries} x
      WHERE ${d.ddl.phase.dead('x')}${tenant('x')}
      GROUP BY x.receiver_key
    ) backlog
    GROUP BY receiver_key`;
}

/**
 * Each receiver key of the list bound from `$1` (see {@link RECEIVER_KEY_COLUMNS}) with its
 * newest success: (receiver_key, live, kept) — `live` the newest `succeeded_at` of its
 * delivery rows, whatever their status (replay and requeue clear `completed_at` and the
 * status, not `succeeded_at`), `kept` the last-success table's, which the prune writes as
 * it deletes. NULL where there is none. One index probe per key: `MAX` over a
 * (receiver_key, succeeded_at) index, the `IS NOT NULL` predicate letting a partial one
 * `WHERE succeeded_at IS NOT NULL` serve it; the last-success table by its primary key.
 */
export function lastSucceededSql(t: TableNames, d: SqlDialect): string {
  return `
    SELECT k.receiver_key,
           (SELECT MAX(s.succeeded_at) FROM ${t.deliveries} s
             WHERE s.receiver_key = k.receiver_key AND s.succeeded_at IS NOT NULL) AS live,
           (SELECT l.succeeded_at FROM ${t.lastSuccess} l
             WHERE l.receiver_key = k.receiver_key) AS kept
    FROM ${d.rowsParam(1, 'k', RECEIVER_KEY_COLUMNS)}`;
}
