/**
 * `inbox.prune({ olderThan })`: delete a consumer's old inbox rows, batch by batch.
 *
 * The inbox grows by a row per message, forever, unless pruned. A row only has to outlive
 * the redeliveries of its message: a broker's redelivery after a crash comes within
 * seconds or minutes, a replay (`outbox.replayEvents`) whenever somebody runs one, and a
 * consumer group reset as far back as the topic's retention. Keep rows at least that long
 * (a week is a common choice): a message redelivered after its row was pruned is
 * processed again.
 *
 * Each batch is one statement in its own transaction, so a prune of a large backlog holds
 * no lock for long and never blocks `handle()` behind it.
 */
import { type Duration, durationSeconds } from '../declare/duration.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { InboxContext } from './context.js';
import type { InboxStatements } from './statements.js';

/** Options of `inbox.prune()`. */
export interface InboxPruneOptions {
  /**
   * Delete the rows received longer ago than this (a {@link Duration}, measured back from
   * `now`), or before this moment (a `Date`).
   */
  readonly olderThan: Duration | Date;
  /** The moment a duration is measured back from. @defaultValue the inbox's clock */
  readonly now?: Date;
  /**
   * The most rows one batch (one statement, one transaction) deletes.
   * @defaultValue 1000
   */
  readonly batchSize?: number;
  /** Stop between batches: a stop waits for at most one batch. */
  readonly signal?: AbortSignal;
}

/** The default batch of `inbox.prune()`. */
export const INBOX_PRUNE_BATCH = 1000;

/** The cutoff of a prune: rows received strictly before it go. */
export function pruneCutoff(c: InboxContext, o: InboxPruneOptions): Date {
  const olderThan = o?.olderThan;
  if (olderThan instanceof Date) {
    if (Number.isNaN(olderThan.getTime()))
      throw new ConfigurationError('inbox.prune({ olderThan }) is an invalid Date', {
        path: 'olderThan',
      });
    return olderThan;
  }
  const seconds =
    typeof olderThan === 'object' && olderThan !== null ? durationSeconds(olderThan) : Number.NaN;
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new ConfigurationError(
      `inbox.prune({ olderThan }) must be a duration such as { days: 7 } or a Date (got ${JSON.stringify(olderThan)})`,
      { path: 'olderThan' },
    );
  }
  const now = o.now ?? c.clock();
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) {
    throw new ConfigurationError('inbox.prune({ now }) must be a valid Date', { path: 'now' });
  }
  return new Date(now.getTime() - seconds * 1000);
}

/** Delete the rows due, a batch at a time; resolves to how many went. */
export async function pruneInbox(
  c: InboxContext,
  sql: InboxStatements,
  options: InboxPruneOptions,
): Promise<number> {
  const cutoff = pruneCutoff(c, options);
  const batch = options.batchSize ?? INBOX_PRUNE_BATCH;
  if (!Number.isInteger(batch) || batch < 1 || batch > 100_000) {
    throw new ConfigurationError(
      `inbox.prune({ batchSize }) must be an integer from 1 to 100000 (got ${batch})`,
      { path: 'batchSize' },
    );
  }
  const bind = [c.consumer, c.sql.value(cutoff, 'timestamp'), batch];
  let total = 0;
  while (!options.signal?.aborted) {
    const deleted = await c.runner.exec(sql.prune, bind);
    total += deleted;
    if (deleted < batch) break;
  }
  return total;
}
