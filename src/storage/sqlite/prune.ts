/**
 * SQLite's part of the prune (sql/prune.ts): timestamps are epoch milliseconds, the
 * upsert keeps the later success with two-argument MAX, and no row locks: the prune's
 * IMMEDIATE transaction holds the database's one write lock, so its re-check and its
 * delete see the same rows.
 */
import type { PruneDialect } from '../sql/prune.js';

export const SQLITE_PRUNE: PruneDialect = {
  windowEnd: (e) => `${e}.recorded_at + ${e}.retention_seconds * 1000`,
  upsertLastSuccess: (t, where) => `
      INSERT INTO ${t.lastSuccess} (receiver_key, succeeded_at)
      SELECT receiver_key, max(succeeded_at) FROM ${t.deliveries}
      WHERE ${where} AND succeeded_at IS NOT NULL
      GROUP BY receiver_key
      ON CONFLICT (receiver_key) DO UPDATE SET succeeded_at = MAX(succeeded_at, excluded.succeeded_at)`,
  lockEvents: () => undefined,
};
