import type { Transaction } from 'sequelize';
import { type FireHeaders, fireHeadersOf } from '../observe/around-delivery.js';
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
 * 0. the outbox's `fireHeaders` (a trace context), read here in the caller's async context
 *    and put under each message's own headers;
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
  const prepared = prepareEvents(
    rt.config,
    rt.fireHeaders ? withFireHeaders(rt, rt.fireHeaders, messages) : messages,
    now,
    where,
  );
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

/**
 * The messages with the outbox's `fireHeaders` under their own (a message's header of the
 * same name wins): read once per call, in the caller's async context, where the active span
 * is the request's. The messages as given when the sources add nothing.
 */
function withFireHeaders(
  rt: Runtime,
  sources: readonly FireHeaders[],
  messages: readonly FireMessage[],
): readonly FireMessage[] {
  const added = fireHeadersOf(sources, rt.logger);
  if (!added) return messages;
  return messages.map((message) => {
    const own: unknown = message.headers;
    if (own === undefined || own === null) return { ...message, headers: added };
    // Headers that are no object are left for prepare to refuse, naming them.
    if (typeof own !== 'object' || Array.isArray(own)) return message;
    return { ...message, headers: { ...added, ...message.headers } };
  });
}
