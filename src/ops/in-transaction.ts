import { Transaction } from 'sequelize';
import type { Runtime } from '../runtime.js';
import { resolveTransaction } from '../transaction/join.js';

/**
 * Run an operation's statements in the caller's transaction — the one passed, else the one
 * Sequelize's CLS carries (as `fire()` resolves it) — so it commits with the change that
 * made it necessary or not at all; else in a transaction of its own, opened the way the
 * dialect's writers open one (SQLite: IMMEDIATE, taking the one write lock up front, so
 * the read of the rows and their write see the same database).
 * @throws {ValidationError} for a transaction of another Sequelize, or one already ended.
 */
export function inOperationTransaction<T>(
  rt: Runtime,
  explicit: Transaction | null | undefined,
  work: (transaction: Transaction) => Promise<T>,
): Promise<T> {
  const joined = resolveTransaction(rt.sequelize, explicit);
  if (joined) return work(joined);
  const type = rt.store.capabilities.handlerTransaction.type;
  return rt.sequelize.transaction(type ? { type: Transaction.TYPES[type] } : {}, work);
}
