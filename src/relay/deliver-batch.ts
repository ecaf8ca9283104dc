import type { DeliveryStatus } from '../declare/types.js';
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, ClaimToken } from '../storage/store.js';
import { sortResults } from './attempt-result.js';
import { type HandOffRun, handOffRows, NO_HAND_OFF } from './hand-off.js';
import type { LaneControl } from './lanes.js';
import { LeaseKeeper } from './lease-keeper.js';
import { planBatch } from './plan-batch.js';
import { handBack, recordBatch } from './record.js';
import { reportVerdicts } from './report.js';
import { runTasks } from './run-tasks.js';

/** What delivering one claimed batch did. */
export interface BatchReport {
  /** Outcomes recorded, by status (`pending` counts NotYet reschedules). */
  readonly counts: Partial<Record<DeliveryStatus, number>>;
  /**
   * Rows handed back without an attempt spent: unstarted because the relay was asked to
   * stop or their lane was set aside by a deferral, or under a handler whose database
   * failed.
   */
  readonly handedBack: number;
  /** Rows whose claim was lost to another worker before their outcome could be recorded. */
  readonly lost: number;
  /** Ids of rows a receiver rescheduled with NotYet (a pass must not claim them straight back). */
  readonly rescheduledIds: readonly string[];
  /**
   * Ids of the rows handed to the task backend (`site: 'task'`), whose task records them;
   * counted in no status here, since nothing has happened to them in this batch.
   */
  readonly handedOffIds: readonly string[];
}

/** How to deliver a batch. */
export interface BatchOptions {
  /** How many attempts run at once. */
  readonly concurrency: number;
  /** Stop starting new attempts once aborted; unstarted rows are handed back. */
  readonly signal?: AbortSignal;
  /** The lease the claim stamped, in seconds. */
  readonly leaseSeconds: number;
  /** When the claim's lease lapses. @defaultValue `leaseSeconds` from the clock's now */
  readonly leaseUntil?: Date;
  /** How to wait between tries of the record. @defaultValue the runtime's scheduler */
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * Which lanes are set aside, and where a deferral reports the lane it pauses (the relay's
   * pauses, a `deliverPending` call's set-aside lanes). Without it (`deliverOne`) a
   * deferral is recorded and pauses nothing: a call made directly holds no batch.
   */
  readonly lanes?: LaneControl;
  /**
   * Run the rows of `site: 'task'` receivers here instead of handing them off: the task
   * worker's `deliverOne(id, claim)`, running the row it took.
   * @defaultValue false
   */
  readonly runTaskRows?: boolean;
  /**
   * Told once every attempt of the batch has ended, before its record: from here the batch
   * only waits for the database's one statement, and the relay may claim its next batch
   * meanwhile (relay-state.ts).
   */
  readonly onAttemptsEnded?: () => void;
}

/**
 * Deliver one claimed batch and record every outcome: plan → run (with a lease keeper) →
 * record → hand back → report.
 *
 * A *handler* runs inside a transaction that also acknowledges its row, so its database
 * work commits exactly when the delivery is recorded done; a *transport* sends outside any
 * transaction. Every other verdict (transport results, failures, dead letters, orphans,
 * rows the database failed under) is recorded in ONE statement at the end, a
 * compare-and-set on the claim, retried while the lease holds. A stop request finishes the
 * attempts in hand and hands the unstarted rows back at once.
 */
export async function deliverBatch(
  rt: Runtime,
  rows: readonly ClaimedDelivery[],
  token: ClaimToken,
  options: BatchOptions,
): Promise<BatchReport> {
  const plan = planBatch(rt, rows, options.runTaskRows);
  const lease = new LeaseKeeper(rt, token, rows, {
    leaseSeconds: options.leaseSeconds,
    leaseUntil: options.leaseUntil ?? new Date(rt.clock().getTime() + options.leaseSeconds * 1000),
  });
  lease.settle(plan.settled.map((s) => s.row.id));
  let run: Awaited<ReturnType<typeof runTasks>>;
  let handOff: HandOffRun = NO_HAND_OFF;
  try {
    if (plan.handOffs.length > 0) {
      handOff = await handOffRows(rt, plan.handOffs, token, lease, {
        stop: options.signal,
        lanes: options.lanes,
      });
    }
    run = await runTasks(rt, plan.tasks, token, lease, {
      concurrency: options.concurrency,
      stop: options.signal,
      lanes: options.lanes,
    });
  } finally {
    await lease.dispose();
  }
  options.onAttemptsEnded?.();

  const sorted = sortResults(plan.settled, run.results);
  // Every verdict in one statement; written even when the relay is stopping.
  const record = await recordBatch(rt, sorted, token, {
    heldUntil: () => lease.heldUntil(),
    sleep: options.sleep ?? ((ms) => rt.scheduler.sleep(ms)),
  });
  // Unstarted and faulted rows go back at once; so does a batch whose record gave up (the
  // compare-and-set hands back only rows nobody else has taken since).
  // A handed-off row is its task's: never handed back from here.
  await handBack(
    rt,
    record.unrecorded
      ? withoutHandedOff(rows, handOff)
      : [...run.unstarted, ...run.faulted, ...handOff.unstarted],
    token,
  );

  const counts = await reportVerdicts(rt, record.recorded);
  if (sorted.acknowledged > 0) counts.succeeded = (counts.succeeded ?? 0) + sorted.acknowledged;
  return {
    counts,
    handedBack:
      run.unstarted.length +
      handOff.unstarted.length +
      (record.unrecorded ? 0 : sorted.handBacks.length),
    lost: sorted.lost + record.lost,
    // Looked for only when the batch had a NotYet (not a pass over every verdict per batch).
    rescheduledIds: counts.pending
      ? record.recorded.filter((v) => v.outcome.status === 'pending').map((v) => v.row.id)
      : NONE,
    handedOffIds: handOff.tried.length > 0 ? handOff.tried.map((r) => r.id) : NONE,
  };
}

/** The batch's rows but those handed to the task backend. */
function withoutHandedOff(
  rows: readonly ClaimedDelivery[],
  handOff: HandOffRun,
): readonly ClaimedDelivery[] {
  if (handOff.tried.length === 0) return rows;
  const gone = new Set(handOff.tried.map((r) => r.id));
  return rows.filter((r) => !gone.has(r.id));
}

const NONE: readonly string[] = Object.freeze([]);
