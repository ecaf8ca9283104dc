/**
 * MariaDB's part of the prune (sql/prune.ts): timestamps are epoch milliseconds, the
 * last-success upsert keeps the later success with GREATEST through `ON DUPLICATE KEY
 * UPDATE`, and the events are locked `FOR UPDATE` in primary-key order, the order cancel,
 * replay and requeue share (store.ts `eventLockSql`).
 */
import type { SqlDialect } from '../sql/dialect.js';
import type { PruneDialect, PruneStatements } from '../sql/prune.js';
import type { TableNames } from '../tables.js';
import { jsonList } from './dialect.js';

export const MARIADB_PRUNE: PruneDialect = {
  windowEnd: (e) => `${e}.recorded_at + ${e}.retention_seconds * 1000`,
  // The grouped rows in a derived table: an ON DUPLICATE KEY UPDATE of an INSERT … SELECT
  // may not read the SELECT's columns when it groups, only VALUES().
  upsertLastSuccess: (t, where) => `
      INSERT INTO ${t.lastSuccess} (receiver_key, succeeded_at)
      SELECT x.receiver_key, x.succeeded_at FROM (
        SELECT receiver_key, max(succeeded_at) AS succeeded_at FROM ${t.deliveries}
        WHERE ${where} AND succeeded_at IS NOT NULL
        GROUP BY receiver_key) AS x
      ON DUPLICATE KEY UPDATE succeeded_at = GREATEST(${t.lastSuccess}.succeeded_at, VALUES(succeeded_at))`,
  lockEvents: (t) =>
    `SELECT id FROM ${t.events} WHERE id IN (SELECT l1.v FROM JSON_TABLE($1, '$[*]' COLUMNS (v BIGINT PATH '$')) AS l1) ORDER BY id FOR UPDATE`,
};

/**
 * The prune's deletes as multi-table DELETEs joined to their id list: MariaDB (before 11.1)
 * plans a single-table DELETE's `IN (subquery)` as a scan of the whole table, the list
 * joined to each row; joined, the rows are found through the list's index (the primary key,
 * or deliveries_settled by event). The same rows as the shared statements (sql/prune.ts).
 */
export function mariadbPruneDeletes(
  t: TableNames,
  d: SqlDialect,
  shared: PruneStatements,
): PruneStatements {
  const settled = d.ddl.phase.settled('x');
  const joined = (table: string, column: string, where = '') =>
    `DELETE x FROM ${table} AS x JOIN ${jsonList(1, 'bigint', 'l')} ON x.${column} = l.v${where ? ` WHERE ${where}` : ''}`;
  return {
    ...shared,
    deleteDeliveriesOfEvents: joined(t.deliveries, 'event_id', settled),
    deleteEvents: joined(t.events, 'id'),
    deleteRows: joined(t.deliveries, 'id'),
    deleteDead: joined(t.deliveries, 'id', "x.status = 'dead'"),
  };
}
