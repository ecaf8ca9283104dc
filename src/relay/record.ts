import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, ClaimToken, Outcome } from '../storage/store.js';
import type { SortedResults } from './attempt-result.js';
import { deliveryLogFields } from './log-fields.js';
import type { RecordedVerdict } from './report.js';

/** The longest pause between two tries of one record, in milliseconds. */
const MAX_RECORD_WAIT_MS = 2_000;

/** How a batch's record is retried. */
export interface RecordOptions {
  /** When the batch's lease lapses: past it, another worker may have the rows. */
  readonly heldUntil: () => Date;
  /** How to wait between tries (not cut short by a stop: the record is always written). */
  readonly sleep: (ms: number) => Promise<void>;
}

/**
 * Record a batch's outcomes in one statement, a compare-and-set on the claim, trying
 * again with backoff (200 ms doubling to 2 s) for as long as the batch's lease holds: a
 * database that is away for a few seconds then finds every outcome recorded within a
 * pause of its return, instead of the batch's keys frozen until the lease lapses. Past
 * the lease the rows are another worker's to take (at least once), and it gives up.
 *
 * @returns how many rows the compare-and-set changed, or `'unrecorded'` when it gave up.
 */
export async function recordOutcomes(
  rt: Runtime,
  outcomes: readonly Outcome[],
  token: ClaimToken,
  options: RecordOptions,
): Promise<number | 'unrecorded'> {
  if (outcomes.length === 0) return 0;
  for (let attempt = 1; ; attempt++) {
    try {
      const started = performance.now();
      const written = await rt.store.recordOutcomes(outcomes, token);
      rt.events.emit('relay:recorded', {
        rows: written,
        durationMs: performance.now() - started,
      });
      return written;
    } catch (error) {
      rt.events.emit('relay:error', { error, during: 'record' });
      const waitMs = Math.min(100 * 2 ** attempt, MAX_RECORD_WAIT_MS);
      if (rt.clock().getTime() + waitMs >= options.heldUntil().getTime()) {
        rt.logger.error(
          `could not record a batch's outcomes before its lease lapsed (${attempt} tries); the rows will be delivered again`,
          { error },
        );
        return 'unrecorded';
      }
      await options.sleep(waitMs);
    }
  }
}

/** What recording a batch came to. */
export interface BatchRecord {
  /** The verdicts the database accepted: only these are reported. */
  readonly recorded: readonly RecordedVerdict[];
  /** Verdicts the compare-and-set refused: the claim was lost to another worker. */
  readonly lost: number;
  /** The record gave up (the lease lapsed first): nothing of the batch is known written. */
  readonly unrecorded: boolean;
}

/**
 * Record a batch's verdicts and hand-backs in one statement ({@link recordOutcomes}), and
 * say which verdicts were written. Only a verdict that was written is reported: a worker
 * whose claim was lost (its lease lapsed and another worker took the rows) must not tell
 * observers, onFailure hooks or its report about outcomes the compare-and-set refused. The
 * rows of one batch share one claim and one lease, so they are lost together; when only
 * some are (a mixed count), which ones cannot be told apart and all are reported.
 */
export async function recordBatch(
  rt: Runtime,
  sorted: SortedResults,
  token: ClaimToken,
  options: RecordOptions,
): Promise<BatchRecord> {
  // One line per batch, not per row: an outage meets every handler in flight at once.
  if (sorted.handBacks.length > 0) {
    const rows = sorted.handBacks.map((r) => `${r.row.id} (${r.row.receiverKey})`);
    const named = rows.length > 10 ? [...rows.slice(0, 10), `and ${rows.length - 10} more`] : rows;
    const which = rows.length === 1 ? `delivery ${rows[0]}` : `deliveries ${named.join(', ')}`;
    rt.logger.warn(
      `${which} met a database fault or a stop, not a receiver failure; handed back with no attempt spent`,
      {
        // One row: its identity as every per-delivery line gives it; several: each one's.
        ...(sorted.handBacks.length === 1 ? deliveryLogFields(sorted.handBacks[0].row) : {}),
        deliveries: sorted.handBacks.slice(0, 10).map((h) => deliveryLogFields(h.row)),
        error: sorted.handBacks[0].error,
        handedBack: rows.length,
      },
    );
  }
  const outcomes: Outcome[] = new Array(sorted.verdicts.length + sorted.handBacks.length);
  let n = 0;
  for (const v of sorted.verdicts) outcomes[n++] = v.outcome;
  for (const h of sorted.handBacks) outcomes[n++] = h.outcome;
  const written = await recordOutcomes(rt, outcomes, token, options);
  if (written === 'unrecorded') return { recorded: [], lost: 0, unrecorded: true };
  if (written === outcomes.length) return { recorded: sorted.verdicts, lost: 0, unrecorded: false };
  rt.logger.warn(
    `${outcomes.length - written} of ${outcomes.length} outcomes were not recorded: their claim was lost to another worker (the lease lapsed)`,
  );
  return {
    recorded: written === 0 ? [] : sorted.verdicts,
    lost: outcomes.length - written,
    unrecorded: false,
  };
}

/**
 * Hand rows back at once, claimable by any worker (a compare-and-set: only rows still held
 * under `token` change). A failure is logged: the rows then return when their lease lapses.
 */
export async function handBack(
  rt: Runtime,
  rows: readonly ClaimedDelivery[],
  token: ClaimToken,
): Promise<void> {
  if (rows.length === 0) return;
  await rt.store
    .release(
      rows.map((r) => r.id),
      token,
      rt.clock(),
    )
    .catch((error) => {
      rt.logger.warn('could not hand back unstarted rows; they return when their lease lapses', {
        error,
      });
      rt.events.emit('relay:error', { error, during: 'release' });
    });
}
