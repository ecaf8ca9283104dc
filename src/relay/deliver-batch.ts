import type { DeliveryStatus } from '../declare/types.js';
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, ClaimToken } from '../storage/store.js';
import { LeaseKeeper } from './lease-keeper.js';
import { planBatch } from './plan-batch.js';
import { recordOutcomes } from './record.js';
import { type RecordedVerdict, reportVerdicts } from './report.js';
import { runTasks } from './run-tasks.js';

/** What delivering one claimed batch did. */
export interface BatchReport {
  /** Outcomes recorded, by status (`pending` counts NotYet reschedules). */
  readonly counts: Partial<Record<DeliveryStatus, number>>;
  /**
   * Rows handed back without an attempt spent: unstarted because the relay was asked to
   * stop, or under a handler whose database failed.
   */
  readonly handedBack: number;
  /** Rows whose claim was lost to another worker before their outcome could be recorded. */
  readonly lost: number;
  /** Ids of rows a receiver rescheduled with NotYet (a pass must not claim them straight back). */
  readonly rescheduledIds: readonly string[];
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
  const plan = planBatch(rt, rows);
  const lease = new LeaseKeeper(rt, token, rows, {
    leaseSeconds: options.leaseSeconds,
    leaseUntil: options.leaseUntil ?? new Date(rt.clock().getTime() + options.leaseSeconds * 1000),
  });
  lease.settle(plan.settled.map((s) => s.row.id));
  let run: Awaited<ReturnType<typeof runTasks>>;
  try {
    run = await runTasks(rt, plan.tasks, token, lease, {
      concurrency: options.concurrency,
      stop: options.signal,
    });
  } finally {
    await lease.dispose();
  }

  // Every verdict in one statement; written even when the relay is stopping.
  const verdicts: RecordedVerdict[] = plan.settled.map((s) => ({
    row: s.row,
    outcome: s.outcome,
    receiver: s.receiver,
  }));
  const handBacks: Extract<(typeof run.results)[number], { kind: 'handBack' }>[] = [];
  let acknowledged = 0;
  let lost = 0;
  for (const r of run.results) {
    if (r.kind === 'outcome') verdicts.push(r);
    else if (r.kind === 'handBack') handBacks.push(r);
    else if (r.kind === 'acknowledged') acknowledged += 1;
    else {
      lost += 1;
      rt.logger.warn(
        `delivery ${r.row.id} (${r.row.receiverKey}) lost its claim to another worker; its work was rolled back`,
      );
    }
  }
  for (const h of handBacks) {
    rt.logger.warn(
      `delivery ${h.row.id} (${h.row.receiverKey}) met a database fault or a stop, not a receiver failure; handed back with no attempt spent`,
      { error: h.error },
    );
  }
  const outcomes = [...verdicts.map((v) => v.outcome), ...handBacks.map((h) => h.outcome)];
  const written = await recordOutcomes(rt, outcomes, token, {
    heldUntil: () => lease.heldUntil(),
    sleep: options.sleep ?? ((ms) => rt.scheduler.sleep(ms)),
  });
  // Only a verdict that was written is reported: a worker whose claim was lost (its lease
  // lapsed and another worker took the rows) must not tell observers, onFailure hooks or
  // its report about outcomes the compare-and-set refused. The rows of one batch share
  // one claim and one lease, so they are lost together; when only some are (a mixed
  // count), which ones cannot be told apart and all are reported.
  let recorded: readonly RecordedVerdict[] = verdicts;
  if (written === 'unrecorded') {
    recorded = [];
  } else if (written < outcomes.length) {
    lost += outcomes.length - written;
    rt.logger.warn(
      `${outcomes.length - written} of ${outcomes.length} outcomes were not recorded: their claim was lost to another worker (the lease lapsed)`,
    );
    if (written === 0) recorded = [];
  }

  // Unstarted and faulted rows go back at once; so does a batch whose record gave up (the
  // compare-and-set hands back only rows nobody else has taken since).
  const handBack =
    written === 'unrecorded'
      ? rows.map((r) => r.id)
      : [...run.unstarted, ...run.faulted].map((r) => r.id);
  if (handBack.length > 0) {
    await rt.store.release(handBack, token, rt.clock()).catch((error) => {
      rt.logger.warn('could not hand back unstarted rows; they return when their lease lapses', {
        error,
      });
      rt.events.emit('relay:error', { error, during: 'release' });
    });
  }

  const counts = await reportVerdicts(rt, recorded);
  if (acknowledged > 0) counts.succeeded = (counts.succeeded ?? 0) + acknowledged;
  return {
    counts,
    handedBack: run.unstarted.length + (written === 'unrecorded' ? 0 : handBacks.length),
    lost,
    rescheduledIds: recorded.filter((v) => v.outcome.status === 'pending').map((v) => v.row.id),
  };
}
