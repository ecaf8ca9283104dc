import type { Sequelize, Transaction } from 'sequelize';
import { type JoinRefusals, joinTransaction } from '../transaction/join.js';

/** `inbox.handle()`'s refusals of a transaction it cannot record in. */
const INBOX_REFUSALS: JoinRefusals = {
  call: 'inbox.handle()',
  foreign:
    "inbox.handle(message, work, { transaction }): the transaction belongs to another Sequelize instance than the inbox's; the inbox row would not commit with your work. Pass a transaction of the inbox's Sequelize.",
  ended: (finished) =>
    `inbox.handle(message, work, { transaction }): the transaction has already ended (${finished}); handle the message inside a live one`,
};

/**
 * The transaction `inbox.handle()` joins (see `joinTransaction`, the one join `fire()`
 * uses too): the one passed, else the one Sequelize's CLS namespace carries, else none —
 * and `handle()` opens its own.
 * @throws {ValidationError} for a transaction of another Sequelize (the inbox row would
 *   commit on another connection than the work it guards), or one already ended.
 * @throws {ConfigurationError} when none is passed and CLS carries another Sequelize's.
 */
export function joinedTransaction(
  sequelize: Sequelize,
  explicit: Transaction | null | undefined,
): Transaction | undefined {
  return joinTransaction(sequelize, explicit, INBOX_REFUSALS);
}
