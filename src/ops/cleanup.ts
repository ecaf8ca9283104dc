/**
 * The topic-outbox reference's two cleanups (`cleanup_dead_lettered`,
 * `cleanup_published`), as outbox methods: explicit operator actions that delete batch by
 * batch, never holding a long lock, and that the relay never runs on its own.
 *
 * - `cleanupDeadLettered({ olderThan })` deletes dead delivery rows that were
 *   dead-lettered longer ago than the window (by `completed_at`, oldest first). A dead
 *   letter holds back the later events of its ordering key until it is requeued or
 *   removed: this is the removal. The event rows stay for `pruneEvents`, which then finds
 *   them settled.
 * - `cleanupPublished({ olderThan })` deletes events every delivery of which succeeded
 *   (or was cancelled), recorded longer ago than the window, whatever retention they were
 *   declared with: the prune's batched, re-checked deletion with its last-success
 *   records, over a different rule.
 */
import type { Duration } from '../declare/duration.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import { checkBatchOptions, checkNow, deleteDue, type PruneBatch, windowMs } from './prune.js';

/** Options of the cleanups. */
export interface CleanupOptions {
  /**
   * How old a row must be to go: dead-lettered (`cleanupDeadLettered`) or recorded
   * (`cleanupPublished`) longer ago than this. Required: a cleanup deletes what a prune
   * would keep, so its window is the caller's decision.
   */
  readonly olderThan: Duration;
  /** The moment the window ends at (tests move it). @defaultValue the outbox's clock */
  readonly now?: Date;
  /** The most rows one batch (one transaction) deletes. @defaultValue `settings.pruneBatchRows` */
  readonly batchSize?: number;
  /** The most rows (dead letters) or events (published) this call deletes. @defaultValue no limit */
  readonly limit?: number;
  /** Stop between batches. */
  readonly signal?: AbortSignal;
  /** Told after each batch. */
  readonly onBatch?: (batch: PruneBatch) => void;
}

function windowOf(rt: Runtime, where: string, o: CleanupOptions): Date {
  if (o?.olderThan === undefined) {
    throw new ConfigurationError(`${where}({ olderThan }) is required, e.g. { days: 30 }`, {
      path: 'olderThan',
    });
  }
  const now = checkNow(where, o.now, rt);
  return new Date(now.getTime() - windowMs(where, o.olderThan, 0));
}

/** Delete dead delivery rows dead-lettered before the window; resolves to how many went. */
export async function cleanupDeadLettered(rt: Runtime, o: CleanupOptions): Promise<number> {
  const where = 'cleanupDeadLettered';
  const before = windowOf(rt, where, o);
  const { batchRows, limit } = checkBatchOptions(rt, where, o);
  let total = 0;
  while (!o.signal?.aborted && total < limit) {
    const n = await rt.store.deleteDeadDeliveries(before, Math.min(batchRows, limit - total));
    if (n === 0) break;
    total += n;
    o.onBatch?.({ events: 0, deliveries: n, totalEvents: 0, totalDeliveries: total });
  }
  return total;
}

/** Delete fully delivered events recorded before the window; resolves to how many went. */
export async function cleanupPublished(rt: Runtime, o: CleanupOptions): Promise<number> {
  const where = 'cleanupPublished';
  const cutoff = windowOf(rt, where, o);
  const { batchRows, limit } = checkBatchOptions(rt, where, o);
  const counts = await deleteDue(
    rt,
    { rule: 'published', now: checkNow(where, o.now, rt), cutoff },
    { batchRows, limit, signal: o.signal, onBatch: o.onBatch },
  );
  return counts.events;
}
