import type { Runtime } from '../runtime.js';
import { withCause } from '../scope/caused-by.js';
import type { ClaimToken } from '../storage/store.js';
import { Attempt, AttemptContext, failureOutcome, handBackOutcome } from './attempt.js';
import type { AttemptResult } from './attempt-result.js';
import type { LeaseKeeper } from './lease-keeper.js';
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
 */
export async function runHandler(
  rt: Runtime,
  task: HandlerTask,
  token: ClaimToken,
  lease: LeaseKeeper,
  stop: AbortSignal | undefined,
): Promise<AttemptResult> {
  const { receiver, item } = task;
  const { row, event } = item;
  const extending = lease.beforeStart(row, receiver);
  if (extending) await extending;
  const attempt = new Attempt(rt, receiver, row, stop);
  let receiverRan = false;
  let receiverDone = false;
  let acknowledgedAt: Date | undefined;
  try {
    const verdict = await rt.store.handleAndAcknowledge(
      async (transaction) => {
        receiverRan = true;
        await attempt.run(
          Promise.resolve(
            withCause(event, () =>
              receiver.handle!(event, new AttemptContext(receiver.key, row, attempt, transaction)),
            ),
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
            { error },
          ),
      },
    );
    if (verdict === 'lost') {
      rt.logger.warn(
        `delivery ${row.id} (${receiver.key}) lost its claim to another worker; its work was rolled back`,
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
    attempt.dispose();
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
