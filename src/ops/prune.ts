/**
 * `outbox.pruneEvents()`: delete the events that are due, batch by batch.
 *
 * An outbox without a prune story becomes the largest table in the database, and quietly;
 * nothing else deletes, so an event's retention is carried out here or not at all. Due is
 * read off the row (storage/sql/prune.ts has the four rules and their indexes): consumed
 * under a `succeeded` / `settled` retention; past its own window and settled; past the
 * ordinary window (`olderThan`, else `settings.retentionDays`) and settled.
 *
 * Batches are bounded by ROWS (an event's delivery rows and the event row itself), so one
 * transaction's lock and write volume stay bounded however the rows are spread; an event
 * with more deliveries than a batch loses them chunk by chunk, each chunk in its own
 * transaction, and goes with the last. Every delete re-checks that its events are still
 * due, so two pruners (or a relay's sweep and a cron) never delete twice, nor delete what
 * a replay made owed again meanwhile.
 */

import type { Duration } from '../declare/duration.js';
import { durationSeconds } from '../declare/duration.js';
import type { EventColumnValue } from '../declare/event-columns.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import type { DueEvent, PruneCounts, PruneWindow } from '../storage/store.js';
import { columnsOption, eventsOfColumns, tenantOption } from './arguments.js';

/** One batch a prune deleted, as `onBatch` is told of it. */
export interface PruneBatch extends PruneCounts {
  /** Events deleted so far by this call, this batch included. */
  readonly totalEvents: number;
  /** Delivery rows deleted so far by this call, this batch included. */
  readonly totalDeliveries: number;
}

/** Options of `outbox.pruneEvents()`. */
export interface PruneEventsOptions {
  /**
   * The ordinary window: an event with no window of its own, settled and recorded longer
   * ago than this, is due. It replaces the ordinary window only; an event declared with a
   * window of its own keeps it.
   * @defaultValue `{ days: settings.retentionDays }`
   */
  readonly olderThan?: Duration;
  /** The moment windows are read against (tests move it). @defaultValue the outbox's clock */
  readonly now?: Date;
  /**
   * The most rows one batch (one transaction) deletes, counting delivery rows and the event
   * row itself. @defaultValue `settings.pruneBatchRows`
   */
  readonly batchSize?: number;
  /** The most events this call deletes. @defaultValue no limit */
  readonly limit?: number;
  /**
   * Stop between batches: a stop waits for at most one batch rather than a whole backlog.
   * The relay's idle sweep passes its stop signal.
   */
  readonly signal?: AbortSignal;
  /** Count what is due and delete nothing: the result is the number of events due. */
  readonly dryRun?: boolean;
  /** Told after each batch (`outbox prune` prints one line per batch). */
  readonly onBatch?: (batch: PruneBatch) => void;
  /**
   * Only this tenant's events (`settings.tenancy: 'column'`), under the same rules: an
   * offboarded tenant's history cut short with `olderThan`, say, leaving everyone else's.
   * @defaultValue every tenant's
   */
  readonly tenant?: string;
  /**
   * Only events whose declared columns hold these values (`{ order_id: 42 }`; every one
   * named must match, `null` for none), under the same rules: resolved to those events once,
   * at the start. @defaultValue every event
   */
  readonly columns?: Readonly<Record<string, EventColumnValue>>;
}

/** The checked options of a pass over a window. */
interface PassOptions {
  readonly batchRows: number;
  readonly limit: number;
  readonly signal: AbortSignal | undefined;
  readonly onBatch: ((batch: PruneBatch) => void) | undefined;
}

/** Check the options every batched deletion shares; names the caller in errors. */
export function checkBatchOptions(
  rt: Runtime,
  where: string,
  o: { batchSize?: number; limit?: number },
): { batchRows: number; limit: number } {
  const batchRows = o.batchSize ?? rt.config.settings.pruneBatchRows;
  if (!Number.isInteger(batchRows) || batchRows < 1 || batchRows > 100_000) {
    throw new ConfigurationError(
      `${where}({ batchSize }) must be an integer from 1 to 100000 (got ${batchRows})`,
      { path: 'batchSize' },
    );
  }
  const limit = o.limit ?? Number.POSITIVE_INFINITY;
  if (o.limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
    throw new ConfigurationError(`${where}({ limit }) must be an integer ≥ 1 (got ${o.limit})`, {
      path: 'limit',
    });
  }
  return { batchRows, limit };
}

/** A window's length in milliseconds, checked. */
export function windowMs(where: string, olderThan: Duration | undefined, days: number): number {
  if (olderThan === undefined) return days * 86_400_000;
  const seconds =
    typeof olderThan === 'object' && olderThan !== null ? durationSeconds(olderThan) : Number.NaN;
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new ConfigurationError(
      `${where}({ olderThan }) must be a duration such as { days: 7 } (got ${JSON.stringify(olderThan)})`,
      { path: 'olderThan' },
    );
  }
  return seconds * 1000;
}

/** A checked `now`. */
export function checkNow(where: string, now: Date | undefined, rt: Runtime): Date {
  const at = now ?? rt.clock();
  if (!(at instanceof Date) || Number.isNaN(at.getTime())) {
    throw new ConfigurationError(`${where}({ now }) must be a valid Date`, { path: 'now' });
  }
  return at;
}

/** Delete the events that are due; resolves to how many went (or, `dryRun`, are due). */
export async function pruneEvents(rt: Runtime, options: PruneEventsOptions = {}): Promise<number> {
  const where = 'pruneEvents';
  const { batchRows, limit } = checkBatchOptions(rt, where, options);
  const now = checkNow(where, options.now, rt);
  const ms = windowMs(where, options.olderThan, rt.config.settings.retentionDays);
  const tenant = tenantOption(rt.config, options.tenant, `${where}()`);
  const events = await eventsOfColumns(rt, columnsOption(rt.config, options.columns, `${where}()`));
  const window: PruneWindow = {
    rule: 'retention',
    now,
    cutoff: new Date(now.getTime() - ms),
    ...(tenant === undefined ? {} : { tenant }),
    ...(events === undefined ? {} : { events }),
  };
  if (options.dryRun) {
    const due = await rt.store.countDueEvents(window);
    return Math.min(due.events, limit);
  }
  const counts = await deleteDue(rt, window, {
    batchRows,
    limit,
    signal: options.signal,
    onBatch: options.onBatch,
  });
  return counts.events;
}

/**
 * Events of `due` (sorted by sequence) that fit one batch of `batchRows` rows: each event
 * costs its delivery rows plus one. The first always goes (the caller chunks it first when
 * it alone is larger than a batch).
 */
export function packBatch(due: readonly DueEvent[], batchRows: number): DueEvent[] {
  const batch: DueEvent[] = [];
  let rows = 0;
  for (const e of due) {
    const cost = e.deliveries + 1;
    if (batch.length > 0 && rows + cost > batchRows) break;
    batch.push(e);
    rows += cost;
  }
  return batch;
}

/**
 * The batched deletion of whatever `window` finds due, shared by `pruneEvents` and
 * `cleanupPublished`: find up to a batch of due events, chunk an event too large for a
 * batch, delete a batch, repeat until nothing is due, `limit` events went, or `signal`
 * aborted (read between batches and between chunks).
 */
export async function deleteDue(
  rt: Runtime,
  window: PruneWindow,
  o: PassOptions,
): Promise<PruneCounts> {
  const store = rt.store;
  let events = 0;
  let deliveries = 0;
  const told = (batch: PruneCounts) => {
    events += batch.events;
    deliveries += batch.deliveries;
    o.onBatch?.({ ...batch, totalEvents: events, totalDeliveries: deliveries });
  };
  // Candidates the re-check refused last time: found again unchanged means the two
  // disagree, never something to spin on.
  let refused = '';
  while (!o.signal?.aborted && events < o.limit) {
    const room = o.limit - events;
    const due = await store.findDueEvents(window, Math.min(o.batchRows, room));
    if (due.length === 0) break;
    const first = due[0]!;
    let batch: DueEvent[];
    if (first.deliveries + 1 > o.batchRows) {
      // Too many deliveries for one batch: delete them a batch at a time; the event goes
      // with the last of them. Until then it is an event with fewer, all terminal.
      let left = first.deliveries;
      let stillDue = true;
      while (left + 1 > o.batchRows) {
        if (o.signal?.aborted) return { events, deliveries };
        const n = await store.deleteDueDeliveries(first.sequence, o.batchRows, window);
        if (n === 0) {
          stillDue = false;
          break;
        }
        left -= n;
        told({ events: 0, deliveries: n });
      }
      if (!stillDue) continue;
      if (o.signal?.aborted) return { events, deliveries };
      batch = [{ sequence: first.sequence, deliveries: left }];
    } else {
      batch = packBatch(due, o.batchRows);
    }
    const ids = batch.map((e) => e.sequence);
    const gone = await store.deleteDueEvents(ids, window);
    if (gone.events === 0 && gone.deliveries === 0) {
      const key = ids.join(',');
      if (key === refused) break;
      refused = key;
      continue;
    }
    refused = '';
    told(gone);
  }
  return { events, deliveries };
}
