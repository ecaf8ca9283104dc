/**
 * One completion time for a batch's successes. A record stamps every row of a batch that
 * succeeded with the same `completed_at` / `succeeded_at`: the latest of their own
 * times, when the batch's last attempt went. That is what lets PostgreSQL mark them all by
 * primary key with one value (`id = ANY($ids)`), the way a bare SQL loop does, instead of
 * joining a list of per-row times; every dialect does the same, so the stored times never
 * depend on the database. A row's time is then late by at most its batch's duration.
 */
import type { Outcome } from '../store.js';

/** The latest completion time of a batch's successes (null when it has none). */
export function lastCompletion(outcomes: readonly Outcome[]): Date | null {
  let last: Date | null = null;
  for (const o of outcomes) {
    if (o.status === 'succeeded' && o.completedAt && (!last || o.completedAt > last))
      last = o.completedAt;
  }
  return last;
}

/** The outcomes with every success stamped at the batch's {@link lastCompletion}. */
export function withBatchCompletion(outcomes: readonly Outcome[]): readonly Outcome[] {
  const last = lastCompletion(outcomes);
  if (!last) return outcomes;
  return outcomes.map((o) => (o.status === 'succeeded' ? { ...o, completedAt: last } : o));
}
