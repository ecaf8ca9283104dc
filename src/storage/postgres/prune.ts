/**
 * PostgreSQL's part of the prune (sql/prune.ts): the own window as an interval, the
 * last-success upsert with GREATEST, and the events locked `FOR UPDATE` in primary-key
 * order (event-locks.ts), the order cancel, replay and requeue share.
 */
import type { PruneDialect } from '../sql/prune.js';
import { lockEventIdsSql } from './event-locks.js';

export const POSTGRES_PRUNE: PruneDialect = {
  windowEnd: (e) => `${e}.recorded_at + ${e}.retention_seconds * interval '1 second'`,
  upsertLastSuccess: (t, where) => `
      INSERT INTO ${t.lastSuccess} AS ls (receiver_key, succeeded_at)
      SELECT receiver_key, max(succeeded_at) FROM ${t.deliveries}
      WHERE ${where} AND succeeded_at IS NOT NULL
      GROUP BY receiver_key
      ON CONFLICT (receiver_key) DO UPDATE SET succeeded_at = GREATEST(ls.succeeded_at, EXCLUDED.succeeded_at)`,
  lockEvents: (t) => lockEventIdsSql(t),
};
