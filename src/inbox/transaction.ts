import type { Sequelize, Transaction } from 'sequelize';
import { ValidationError } from '../errors/outbox-error.js';
import { finishedOf, parentOf } from '../fire/transaction.js';

/**
 * The transaction `inbox.handle()` joins: the one passed, else the one Sequelize's CLS
 * namespace carries (when the application enabled `Sequelize.useCLS`), else none — and
 * `handle()` opens its own.
 * @throws {ValidationError} for a transaction of another Sequelize (the inbox row would
 *   commit on another connection than the work it guards), or one already ended.
 */
export function joinedTransaction(
  sequelize: Sequelize,
  explicit: Transaction | null | undefined,
): Transaction | undefined {
  if (explicit) {
    if ((explicit as unknown as { sequelize?: unknown }).sequelize !== sequelize) {
      throw new ValidationError(
        "inbox.handle(message, work, { transaction }): the transaction belongs to another Sequelize instance than the inbox's; the inbox row would not commit with your work. Pass a transaction of the inbox's Sequelize.",
        { path: 'options.transaction' },
      );
    }
    const finished = ended(explicit);
    if (finished) {
      throw new ValidationError(
        `inbox.handle(message, work, { transaction }): the transaction has already ended (${finished}); handle the message inside a live one`,
        { path: 'options.transaction' },
      );
    }
    return explicit;
  }
  const cls = (sequelize.constructor as unknown as { _cls?: { get(key: string): unknown } })._cls;
  const ambient = cls?.get('transaction') as Transaction | undefined;
  return ambient && !ended(ambient) ? ambient : undefined;
}

function ended(transaction: Transaction): string | undefined {
  for (let t: Transaction | undefined = transaction; t; t = parentOf(t)) {
    const finished = finishedOf(t);
    if (finished) return finished;
  }
  return undefined;
}
