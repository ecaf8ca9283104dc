import type { DeliveryContext, DeliveryItem, DeliveryResult } from '../declare/types.js';
import { RetryAfter } from '../errors/signals.js';
import { type AroundDelivery, runAround } from '../observe/around-delivery.js';
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery } from '../storage/store.js';
import {
  Attempt,
  AttemptContext,
  failureOutcome,
  handBackOutcome,
  successOutcome,
  timeoutSeconds,
} from './attempt.js';
import { deliveryOutcome } from './attempt-outcome.js';
import type { AttemptResult } from './attempt-result.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { TransportTask } from './plan-batch.js';

/**
 * Run one transport attempt outside any transaction: `deliverBatch` with every row of the
 * task in one call (one result per item), or `deliver` with its one row. One attempt
 * signal for the call, fired by its time limit (the call then fails as a
 * `DeliveryTimeout`, and the signal asks the client to cancel the send) and by a stop.
 * A throw fails every row of the call.
 *
 * The outbox's `aroundDelivery` hooks wrap the CALL: once per `deliver`, and once per
 * `deliverBatch` with all its items (one call, one signal, one time limit; see
 * `DeliveryAttempt`). Without hooks nothing is added to the path (no closure, no promise).
 */
export function runTransport(
  rt: Runtime,
  task: TransportTask,
  lease: LeaseKeeper,
  stop: AbortSignal | undefined,
): Promise<AttemptResult[]> {
  const hooks = rt.aroundDelivery;
  if (hooks !== undefined) return runTransportAround(rt, hooks, task, lease, stop);
  if (!task.batched)
    throw new TypeError(
      'runTransport: a deliver row without aroundDelivery hooks runs in its worker (runTasks)',
    );
  return attemptBatch(rt, task, lease, stop, undefined, undefined);
}

/**
 * THE call of one row's `deliver`, with the context its attempt shows. Both ways a `deliver`
 * row runs make it here — inline in its worker (run-tasks.ts, no hooks: the worker awaits
 * the call's own promise, so a row costs no promise of ours) and {@link deliverRow} (under
 * `aroundDelivery` hooks) — and differ only in how they wait for it: the worker is replaced
 * when the row's time limit runs out first; the hooks' promise settles. May throw at once
 * (the caller's try takes it as the failed attempt), and may return no promise (a plain
 * JavaScript transport object's `deliver` that went).
 */
export function callDeliver(
  task: TransportTask,
  context: DeliveryContext,
): PromiseLike<unknown> | undefined {
  return task.receiver.delivery!.deliver!(task.items[0].event, context) as
    | PromiseLike<unknown>
    | undefined;
}

/**
 * One row's `deliver` attempt (a non-batched task: its one item) as a promise: extend its
 * lease if needed, make the call, and turn its answer into the row's one result. The
 * promise is settled once, by the call or by the time limit, whichever comes first; no
 * async function and no promise around the call's own. The `aroundDelivery` hooks' path
 * uses it (a hook's `run` needs a promise), passing the attempt and the context it showed
 * the hooks, and disposes that attempt itself. Without hooks, `runTasks` runs the row
 * inline in its worker instead (run-tasks.ts), which spares even this promise. Disposes
 * the {@link Attempt} it makes.
 */
export function deliverRow(
  rt: Runtime,
  task: TransportTask,
  lease: LeaseKeeper,
  stop: AbortSignal | undefined,
  given?: Attempt,
  context?: DeliveryContext,
): Promise<AttemptResult> {
  const extending = lease.beforeStart(task.items[0].row, task.receiver);
  return extending
    ? extending.then(() => sendRow(rt, task, stop, given, context))
    : sendRow(rt, task, stop, given, context);
}

/** {@link deliverRow}'s call, its lease in hand. */
function sendRow(
  rt: Runtime,
  task: TransportTask,
  stop: AbortSignal | undefined,
  given: Attempt | undefined,
  context: DeliveryContext | undefined,
): Promise<AttemptResult> {
  const { receiver } = task;
  const { row } = task.items[0];
  const attempt = given ?? new Attempt(rt, receiver, row, stop);
  return new Promise<AttemptResult>((resolve, reject) => {
    let ended = false;
    const end = (result: DeliveryResult) => {
      if (ended) return;
      ended = true;
      if (!given) attempt.dispose();
      try {
        resolve(verdictOf(rt, task, attempt, row, result, rt.clock()));
      } catch (error) {
        reject(error); // a fault of the relay's own: runTasks hands the row back
      }
    };
    // The limit: once it runs out the attempt fails as a DeliveryTimeout, whatever the
    // call does later (at once, when the hooks before it used it all up).
    const fail = (error: unknown) => end({ status: 'failed', error });
    attempt.onExpire(fail);
    let sent: PromiseLike<unknown> | undefined;
    try {
      sent = callDeliver(task, context ?? new AttemptContext(receiver.key, row, attempt));
    } catch (error) {
      fail(error);
      return;
    }
    if (typeof sent?.then === 'function') sent.then(() => end(SENT), fail);
    else end(SENT);
  });
}

/** {@link runTransport} under the outbox's `aroundDelivery` hooks. */
async function runTransportAround(
  rt: Runtime,
  hooks: readonly AroundDelivery[],
  task: TransportTask,
  lease: LeaseKeeper,
  stop: AbortSignal | undefined,
): Promise<AttemptResult[]> {
  const { receiver, items } = task;
  // Made before the hooks: their time counts against the attempt's time limit. The hooks
  // see the very contexts the transport is handed.
  const attempt = new Attempt(rt, receiver, items[0].row, stop);
  const calls: DeliveryItem[] = items.map((item) => ({
    event: item.event,
    context: new AttemptContext(receiver.key, item.row, attempt),
  }));
  try {
    const around = await runAround(hooks, {
      attempt: {
        receiverKey: receiver.key,
        receiverKind: 'transport',
        batched: task.batched,
        items: calls,
      },
      run: () =>
        task.batched
          ? attemptBatch(rt, task, lease, stop, attempt, calls)
          : deliverRow(rt, task, lease, stop, attempt, calls[0].context).then((r) => [r]),
      outcomes: (results) => results.map(deliveryOutcome),
      limitMs: timeoutSeconds(rt, receiver) * 1000,
      setTimeout: (fn, ms) => rt.scheduler.setTimeout(fn, ms),
      logger: rt.logger,
    });
    if (around.ran) return around.result;
    // No hook reached the attempt: every row an ordinary failed attempt, never a lost one.
    const failed: DeliveryResult = { status: 'failed', error: around.error };
    const now = rt.clock();
    return items.map(({ row }) => verdictOf(rt, task, attempt, row, failed, now));
  } finally {
    attempt.dispose();
  }
}

/**
 * One `deliverBatch` attempt: extend the rows' leases if needed, make the call with every
 * row, and turn its answer into one result per row. Disposes the {@link Attempt} it makes
 * (one given by the hooks' path is theirs to dispose, with the contexts they were shown).
 */
async function attemptBatch(
  rt: Runtime,
  task: TransportTask,
  lease: LeaseKeeper,
  stop: AbortSignal | undefined,
  given: Attempt | undefined,
  calls: readonly DeliveryItem[] | undefined,
): Promise<AttemptResult[]> {
  const { receiver, items } = task;
  const delivery = receiver.delivery!;
  // One clock read for the call's rows, read again only after an extension was awaited.
  let nowMs = rt.clock().getTime();
  for (const { row } of items) {
    const extending = lease.beforeStart(row, receiver, nowMs);
    if (extending) {
      await extending;
      nowMs = rt.clock().getTime();
    }
  }
  const attempt = given ?? new Attempt(rt, receiver, items[0].row, stop);
  // One result per item; undefined when every item went (a `deliverBatch` that resolved to
  // nothing): no list is built for the common case.
  let results: readonly (DeliveryResult | undefined)[] | undefined;
  try {
    const batch: readonly DeliveryItem[] =
      calls ??
      items.map((item) => ({
        event: item.event,
        context: new AttemptContext(receiver.key, item.row, attempt),
      }));
    const answered = await attempt.run(delivery.deliverBatch!(batch, { signal: attempt.signal }));
    results = answered ?? undefined;
    if (answered && answered.length !== items.length) {
      const error = new TypeError(
        `${receiver.key}: deliverBatch resolved to ${answered.length} results for ${items.length} items; it must resolve to one per item (or to nothing when all went)`,
      );
      results = items.map(() => ({ status: 'failed', error }));
    }
  } catch (error) {
    results = items.map(() => ({ status: 'failed', error }));
  } finally {
    if (!given) attempt.dispose();
  }
  const now = rt.clock();
  const verdicts: AttemptResult[] = new Array(items.length);
  for (let i = 0; i < items.length; i++)
    verdicts[i] = verdictOf(rt, task, attempt, items[i].row, results?.[i] ?? SENT, now);
  return verdicts;
}

/** What one item's result records (also the lean `deliver` row's, in run-tasks.ts). */
export function verdictOf(
  rt: Runtime,
  { receiver }: TransportTask,
  attempt: Attempt,
  row: ClaimedDelivery,
  result: DeliveryResult,
  now: Date,
): AttemptResult {
  if (result.status === 'sent')
    return { kind: 'outcome', row, receiver, outcome: successOutcome(row, now) };
  // The send gave up because the relay is stopping: no attempt spent, handed back.
  if (result.status === 'failed' && attempt.gaveUpOnStop(result.error))
    return { kind: 'handBack', row, outcome: handBackOutcome(row, now), error: result.error };
  const error =
    result.status === 'retryAfter'
      ? new RetryAfter(result.seconds, {
          message: messageOf(result.error),
          counts: result.counts ?? true,
        })
      : result.error;
  return {
    kind: 'outcome',
    row,
    receiver,
    outcome: failureOutcome(rt, row, receiver, error, now),
    error,
  };
}

/** The result of a call that went (one shared object: the common case builds nothing). */
export const SENT: DeliveryResult = { status: 'sent' };

function messageOf(error: unknown): string | undefined {
  return error instanceof Error ? error.message : error === undefined ? undefined : String(error);
}
