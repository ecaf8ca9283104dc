import type { ResolvedReceiver } from '../declare/define-outbox.js';
import type { DeliveryContext, OutboxEvent } from '../declare/types.js';
import { type AroundDelivery, runAround } from '../observe/around-delivery.js';
import type { Runtime } from '../runtime.js';
import { withCause } from '../scope/caused-by.js';
import type { ClaimToken } from '../storage/store.js';
import {
  Attempt,
  AttemptContext,
  failureOutcome,
  handBackOutcome,
  timeoutSeconds,
} from './attempt.js';
import { deliveryOutcome } from './attempt-outcome.js';
import type { AttemptResult } from './attempt-result.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { deliveryLogFields } from './log-fields.js';
import type { HandlerTask } from './plan-batch.js';
import { isTransientDatabaseError } from './transient.js';

/**
 * Run one handler attempt: the receiver's work and the row's acknowledgement in ONE
 * transaction, so database work in the same database commits exactly when the delivery is
 * recorded done. The attempt's signal fires on its time limit and on a stop.
 *
 * A failure of the database itself (the transaction could not begin, commit, or lost its
 * connection — the transient codes of the retry table) is no failure of the receiver: the
 * row is handed back without an attempt spent, so an outage never dead-letters good events.
 * So is a failure after the relay was told to stop (the receiver gave up on its signal).
 *
 * The outbox's `aroundDelivery` hooks wrap the WHOLE transaction (see `AroundDelivery`):
 * they see what really committed, and their own time never holds the transaction open.
 * Without hooks nothing is added to the path (no closure, no promise).
 */
export function runHandler(
  rt: Runtime,
  task: HandlerTask,
  token: ClaimToken,
  lease: LeaseKeeper,
  stop: AbortSignal | undefined,
): Promise<AttemptResult> {
  const hooks = rt.aroundDelivery;
  return hooks === undefined
    ? attemptHandler(rt, task, token, lease, stop, undefined)
    : runHandlerAround(rt, hooks, task, token, lease, stop);
}

/** {@link runHandler} under the outbox's `aroundDelivery` hooks. */
async function runHandlerAround(
  rt: Runtime,
  hooks: readonly AroundDelivery[],
  task: HandlerTask,
  token: ClaimToken,
  lease: LeaseKeeper,
  stop: AbortSignal | undefined,
): Promise<AttemptResult> {
  const { receiver, item } = task;
  const { row } = item;
  // Made before the hooks: their time counts against the attempt's time limit.
  const attempt = new Attempt(rt, receiver, row, stop);
  try {
    const around = await runAround(hooks, {
      attempt: {
        receiverKey: receiver.key,
        receiverKind: 'handler',
        batched: false,
        items: [{ event: item.event, context: new AttemptContext(receiver.key, row, attempt) }],
      },
      run: () => attemptHandler(rt, task, token, lease, stop, attempt),
      outcomes: (result) => [deliveryOutcome(result)],
      limitMs: timeoutSeconds(rt, receiver) * 1000,
      setTimeout: (fn, ms) => rt.scheduler.setTimeout(fn, ms),
      logger: rt.logger,
    });
    if (around.ran) return around.result;
    // No hook reached the attempt: an ordinary failed attempt, never a lost row.
    return {
      kind: 'outcome',
      row,
      receiver,
      outcome: failureOutcome(rt, row, receiver, around.error, rt.clock()),
      error: around.error,
    };
  } finally {
    attempt.dispose();
  }
}

/**
 * The attempt itself: extend the lease if needed, then BEGIN, the handler, the
 * acknowledgement, COMMIT; its result as a value. Disposes the {@link Attempt} it makes
 * (one given by the hooks' path is theirs to dispose).
 */
async function attemptHandler(
  rt: Runtime,
  task: HandlerTask,
  token: ClaimToken,
  lease: LeaseKeeper,
  stop: AbortSignal | undefined,
  given: Attempt | undefined,
): Promise<AttemptResult> {
  const { receiver, item } = task;
  const { row, event } = item;
  const extending = lease.beforeStart(row, receiver);
  if (extending) await extending;
  const attempt = given ?? new Attempt(rt, receiver, row, stop);
  let receiverRan = false;
  let receiverDone = false;
  let acknowledgedAt: Date | undefined;
  try {
    const verdict = await rt.store.handleAndAcknowledge(
      async (transaction) => {
        receiverRan = true;
        await attempt.run(
          invokeHandler(
            receiver,
            event,
            new AttemptContext(receiver.key, row, attempt, transaction),
          ),
        );
        receiverDone = true;
      },
      {
        id: row.id,
        token,
        at: () => {
          acknowledgedAt = rt.clock();
          return acknowledgedAt;
        },
        afterCommitFailed: (error) =>
          rt.logger.warn(
            `an afterCommit hook of delivery ${row.id} (${receiver.key}) threw; the delivery is recorded done`,
            { ...deliveryLogFields(row), error },
          ),
      },
    );
    if (verdict === 'lost') {
      rt.logger.warn(
        `delivery ${row.id} (${receiver.key}) lost its claim to another worker; its work was rolled back`,
        deliveryLogFields(row),
      );
      return { kind: 'lost', row };
    }
    return { kind: 'acknowledged', row, at: acknowledgedAt ?? rt.clock() };
  } catch (error) {
    if (attempt.gaveUpOnStop(error) || isDatabaseFault(error, receiverRan, receiverDone)) {
      return { kind: 'handBack', row, outcome: handBackOutcome(row, rt.clock()), error };
    }
    return {
      kind: 'outcome',
      row,
      receiver,
      outcome: failureOutcome(rt, row, receiver, error, rt.clock()),
      error,
    };
  } finally {
    if (!given) attempt.dispose();
  }
}

/**
 * THE one place a durable handler is invoked, inside its transaction and the hooks' async
 * context. Whatever must surround the receiver's own code (attribution's `causedBy`) wraps
 * this call. A synchronous throw becomes the returned promise's rejection.
 */
function invokeHandler(
  receiver: ResolvedReceiver,
  event: OutboxEvent,
  context: DeliveryContext,
): Promise<unknown> {
  try {
    // Events the handler fires record this one as their parent, and its chain's id.
    return Promise.resolve(withCause(event, () => receiver.handle!(event, context)));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Whether a handler's failure was the database's: a transient database error (the retry
 * table) raised before the receiver ran (BEGIN), after it finished (the acknowledgement,
 * COMMIT), or by a Sequelize query while it ran (its transaction's connection went away).
 */
function isDatabaseFault(error: unknown, ran: boolean, done: boolean): boolean {
  if (!isTransientDatabaseError(error)) return false;
  if (!ran || done) return true;
  return typeof (error as { name?: unknown }).name === 'string'
    ? (error as Error).name.startsWith('Sequelize')
    : false;
}
