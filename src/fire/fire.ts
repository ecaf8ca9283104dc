import type { Transaction } from 'sequelize';
import type { Runtime } from '../runtime.js';
import { arrangeAfterCommit } from './after-commit.js';
import { runInlineReceivers } from './inline.js';
import { planDeliveries } from './plan.js';
import { prepareEvents } from './prepare.js';
import { resolveTransaction } from './transaction.js';
import type { FiredEvent, FireMessage } from './types.js';
import { writeEvents } from './write.js';

export type { FiredEvent, FireMessage, FireOptions } from './types.js';

/**
 * `fire()` and `fireMany()`, in four steps:
 *
 * 1. prepare (pure): validate and encode every message — bad input throws before the first
 *    statement, so it writes nothing and leaves the caller's transaction usable;
 * 2. plan, inside the caller's transaction: the delivery rows each event owes;
 * 3. write: the events and their rows in one store call (then `inline` receivers run in
 *    the transaction, where a throw aborts it);
 * 4. after commit: `onCommit` receivers and one coalesced wakeup signal, once the
 *    outermost transaction has really committed.
 */
export async function fireEvents(
  rt: Runtime,
  messages: readonly FireMessage[],
  explicit: Transaction | null | undefined,
  where: string,
): Promise<FiredEvent[]> {
  const now = rt.clock();
  const prepared = prepareEvents(rt.config, messages, now, where);
  const transaction = resolveTransaction(rt.sequelize, explicit);
  if (prepared.length === 0) return [];
  const inTransaction = async (t: Transaction): Promise<FiredEvent[]> => {
    const planned = await planDeliveries(prepared, {
      now,
      transaction: t,
      where: (i) => (messages.length > 1 ? `${where}[${i}]` : where),
    });
    const fired = await writeEvents(rt, planned, t);
    await runInlineReceivers(planned, fired, t);
    arrangeAfterCommit(rt, planned, fired, t);
    return fired;
  };
  return transaction ? inTransaction(transaction) : rt.sequelize.transaction(inTransaction);
}
