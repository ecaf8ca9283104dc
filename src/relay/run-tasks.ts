import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, ClaimToken } from '../storage/store.js';
import { deferralPause } from './attempt.js';
import type { AttemptResult } from './attempt-result.js';
import type { LaneControl } from './lanes.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { rowsOf, type Task } from './plan-batch.js';
import { reportAcknowledged } from './report.js';
import { runHandler } from './run-handler.js';
import { deliverRow, runTransport } from './run-transport.js';

/** What running a batch's tasks came to. */
export interface TasksRun {
  /** One result per row attempted, in the order the attempts ended. */
  readonly results: readonly AttemptResult[];
  /**
   * Rows never started: the relay was asked to stop, or their lane was set aside by a
   * deferral (handed back rather than attempted: each would cost a call to learn what the
   * first already said).
   */
  readonly unstarted: readonly ClaimedDelivery[];
  /**
   * Rows whose task threw: a fault of the relay's own (a receiver's failure is a result,
   * never a throw). Handed back like unstarted rows, while the rest of the batch goes on;
   * one row's fault must not strand the others until their lease lapses.
   */
  readonly faulted: readonly ClaimedDelivery[];
}

/**
 * Run the tasks `concurrency` at a time (one at a time on a single-writer database), and
 * start no new one once `stop` aborts, nor one whose lane `lanes` says is set aside. A
 * deferral (`RetryAfter(…, { counts: false })` of a receiver with `giveUpAfter`) tells
 * `lanes` at once, so the lane's later tasks of this batch (and of a batch beside it) are
 * handed back. Each task's result is returned as a value; the lease
 * keeper lets go of a row once its fate is written (a handler's acknowledgement), and a
 * handler's committed delivery is reported at once.
 */
export async function runTasks(
  rt: Runtime,
  tasks: readonly Task[],
  token: ClaimToken,
  lease: LeaseKeeper,
  options: {
    readonly concurrency: number;
    readonly stop?: AbortSignal;
    readonly lanes?: LaneControl;
  },
): Promise<TasksRun> {
  const limit = rt.store.capabilities.writers === 'one' ? 1 : Math.max(1, options.concurrency);
  const workers = Math.min(limit, tasks.length);
  const laneControl = options.lanes;
  const results: AttemptResult[] = [];
  const unstarted: ClaimedDelivery[] = [];
  const faulted: ClaimedDelivery[] = [];
  let next = 0;
  /** Take one row's result: settle its lease if its fate is written, report, pause a lane. */
  const settled = (result: AttemptResult): void => {
    if (result.kind === 'acknowledged') reportAcknowledged(rt, result.row);
    // A row whose fate is already written (acknowledged with the handler's work, or
    // lost to another worker) needs no lease; a verdict still to be recorded keeps it.
    if (result.kind === 'acknowledged' || result.kind === 'lost') lease.settle([result.row.id]);
    // Only a failure can be a deferral (a success carries no error).
    if (result.kind === 'outcome' && laneControl && result.error !== undefined) {
      const pause = deferralPause(rt, result.receiver, result.outcome, result.error);
      if (pause !== undefined) laneControl.defer(result.receiver.lane, pause);
    }
    results.push(result);
  };
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const task = tasks[next++];
      if (options.stop?.aborted || laneControl?.setAside(task.receiver.lane)) {
        unstarted.push(...rowsOf(task));
        continue;
      }
      try {
        if (task.kind === 'handler') {
          settled(await runHandler(rt, task, token, lease, options.stop));
        } else if (!task.batched && rt.aroundDelivery === undefined) {
          // One row's `deliver` without hooks: the lean path, one result.
          settled(await deliverRow(rt, task, lease, options.stop));
        } else {
          for (const result of await runTransport(rt, task, lease, options.stop)) settled(result);
        }
      } catch (error) {
        const rows = rowsOf(task);
        faulted.push(...rows);
        rt.logger.error(
          `delivering ${rows.map((r) => `${r.id} (${r.receiverKey})`).join(', ')} failed inside the relay; handed back`,
          { error },
        );
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return { results, unstarted, faulted };
}
