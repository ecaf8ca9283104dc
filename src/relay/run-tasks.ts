import type { DeliveryResult } from '../declare/types.js';
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, ClaimToken } from '../storage/store.js';
import { Attempt, AttemptContext, deferralPause } from './attempt.js';
import type { AttemptResult } from './attempt-result.js';
import type { LaneControl } from './lanes.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { rowsOf, type Task, type TransportTask } from './plan-batch.js';
import { reportAcknowledged } from './report.js';
import { runHandler } from './run-handler.js';
import { callDeliver, runTransport, SENT, verdictOf } from './run-transport.js';

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
 *
 * A transport's `deliver` row without `aroundDelivery` hooks, the relay's commonest
 * attempt, runs inline in its worker: the worker awaits the call itself. When the row's
 * time limit runs out first, the expiry records the timeout and starts a new worker in the
 * hung one's place, so the batch never waits on a hung call, and the hung worker ends,
 * recording nothing, whenever its call returns. That spares each row the promise, the
 * closures and the extra turn that racing the call against its limit took (`deliverRow`,
 * which the hooks' path still uses: ~900 B and a microtask per row with the two `Date`s
 * now spared too, bench/experiments/transport-cpu.ts `--heap-profile`).
 */
export function runTasks(
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
  const stop = options.stop;
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
  /** A task that threw inside the relay: its rows are handed back, the batch goes on. */
  const fault = (task: Task, error: unknown): void => {
    const rows = rowsOf(task);
    faulted.push(...rows);
    rt.logger.error(
      `delivering ${rows.map((r) => `${r.id} (${r.receiverKey})`).join(', ')} failed inside the relay; handed back`,
      { error },
    );
  };
  // When inline rows end: one Date per millisecond, not one per row (the success outcomes
  // of a batch are recorded with their latest time; see SqlStore.recordOutcomes).
  let endedMs = Number.NaN;
  let endedAt = new Date(0);
  const rowEnded = (): Date => {
    const ms = rt.nowMs();
    if (ms !== endedMs) {
      endedMs = ms;
      endedAt = new Date(ms);
    }
    return endedAt;
  };
  /** An inline row's end, by its call or by its limit: dispose the attempt, take the verdict. */
  const endInline = (task: TransportTask, attempt: Attempt, result: DeliveryResult): void => {
    attempt.dispose();
    try {
      settled(verdictOf(rt, task, attempt, task.items[0].row, result, rowEnded()));
    } catch (error) {
      fault(task, error);
    }
  };

  return new Promise<TasksRun>((resolve, reject) => {
    // Workers still owed an end; a worker whose inline row timed out hands its count to the
    // worker it starts in its place, and ends uncounted whenever its call returns.
    let running = workers;
    const finished = (counted: boolean): void => {
      if (counted && --running === 0) resolve({ results, unstarted, faulted });
    };
    const launch = (): void => {
      worker().then(finished, reject);
    };
    const worker = async (): Promise<boolean> => {
      // This worker's inline row, for its limit's expiry (one callback per worker, not per row).
      let inlineTask: TransportTask | undefined;
      let inlineAttempt: Attempt | undefined;
      let replaced = false;
      const expired = (timeout: unknown): void => {
        replaced = true;
        endInline(inlineTask!, inlineAttempt!, { status: 'failed', error: timeout });
        launch();
      };
      while (next < tasks.length) {
        const task = tasks[next++];
        if (stop?.aborted || laneControl?.setAside(task.receiver.lane)) {
          unstarted.push(...rowsOf(task));
          continue;
        }
        try {
          if (task.kind === 'handler') {
            settled(await runHandler(rt, task, token, lease, stop));
          } else if (!task.batched && rt.aroundDelivery === undefined) {
            // One `deliver` row, awaited here: the lean path (see above). Written out in
            // the loop, not as a function: an async call per row is the garbage it spares.
            const { receiver } = task;
            const { row } = task.items[0];
            const extending = lease.beforeStart(row, receiver);
            if (extending) await extending;
            const attempt = new Attempt(rt, receiver, row, stop);
            inlineTask = task;
            inlineAttempt = attempt;
            attempt.onExpire(expired);
            if (replaced) return false; // a limit that had run out already
            let result = SENT;
            try {
              await callDeliver(task, new AttemptContext(receiver.key, row, attempt));
            } catch (error) {
              result = { status: 'failed', error };
            }
            // The limit ran out first: its timeout is recorded, another worker has this place.
            if (replaced) return false;
            endInline(task, attempt, result);
          } else {
            for (const result of await runTransport(rt, task, lease, stop)) settled(result);
          }
        } catch (error) {
          fault(task, error);
        }
      }
      return true;
    };
    if (workers === 0) resolve({ results, unstarted, faulted });
    for (let i = 0; i < workers; i++) launch();
  });
}
