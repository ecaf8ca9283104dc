/**
 * MariaDB's part of the prune (sql/prune.ts): timestamps are epoch milliseconds, the
 * last-success upsert keeps the later success with GREATEST through `ON DUPLICATE KEY
 * UPDATE`, and the events are locked `FOR UPDATE` in primary-key order, the order cancel,
 * replay and requeue share (store.ts `eventLockSql`).
 */
import type { PruneDialect } from '../sql/prune.js';

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
