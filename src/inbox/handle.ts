/**
 * `inbox.handle(message, work)`: process a message once, however often it is delivered.
 *
 * Every broker we send to delivers at least once: a consumer that crashes between its
 * commit and its acknowledgement gets the message again, and a replay sends it again on
 * purpose. The inbox makes the consumer's own database work effectively once: the event
 * id is recorded in the inbox table IN THE SAME TRANSACTION as the work, so
 *
 * - the work committed ⇒ the id is recorded, and a redelivery finds it and is skipped
 *   (`duplicate`: the work is not run);
 * - the work failed ⇒ both roll back, and the redelivery processes the message again.
 *
 * The id is inserted FIRST (`INSERT … ON CONFLICT DO NOTHING`), before the work, so two
 * deliveries of one message racing on two connections never both run it: on PostgreSQL
 * the second insert waits for the first's open transaction and then sees its row (or, if
 * it rolled back, takes over); on SQLite the single write lock puts one after the other.
 *
 * Inside a caller's transaction the two run in a savepoint of it, so a failed work undoes
 * the inbox row with it even when the caller catches the error and commits the rest.
 * Only database work is covered: an email sent from `work` and then rolled back is still
 * sent. Send such things from an outbox event fired in the same transaction.
 */
import { Transaction } from 'sequelize';
import { ValidationError } from '../errors/outbox-error.js';
import type { InboxContext } from './context.js';
import { checkMessage, type InboxMessage } from './message.js';
import type { InboxStatements } from './statements.js';
import { joinedTransaction } from './transaction.js';

/** Options of `inbox.handle()`. */
export interface HandleOptions {
  /**
   * The transaction to record the message in, beside your own work in it (else the one
   * Sequelize's CLS carries, else one of the inbox's own). The inbox row and `work` run in
   * a savepoint of it. `null` uses one of the inbox's own even inside a CLS transaction; a
   * CLS transaction of another Sequelize instance is refused (`ConfigurationError`).
   */
  readonly transaction?: Transaction | null;
}

/** What `inbox.handle()` did with a message. */
export type InboxResult<T> =
  | {
      /** The message was new: `work` ran, and committed with the inbox row. */
      readonly status: 'processed';
      readonly eventId: string;
      /** What `work` returned. */
      readonly result: T;
    }
  | {
      /** The message was processed before (or by a concurrent delivery): `work` did not run. */
      readonly status: 'duplicate';
      readonly eventId: string;
    };

/** The work of a message: your database writes, in the transaction given. */
export type InboxWork<T> = (transaction: Transaction) => Promise<T> | T;

export async function handleMessage<T>(
  c: InboxContext,
  sql: InboxStatements,
  message: InboxMessage,
  work: InboxWork<T>,
  options: HandleOptions = {},
): Promise<InboxResult<T>> {
  const m = checkMessage('inbox.handle', message);
  if (typeof work !== 'function') {
    throw new ValidationError(
      `inbox.handle(message, work): work must be a function (transaction) => …, your database work (got ${typeof work})`,
      { path: 'work' },
    );
  }
  const joined = joinedTransaction(c.sequelize, options?.transaction);
  const d = c.sql;
  const run = async (transaction: Transaction): Promise<InboxResult<T>> => {
    const received = await c.runner.exec(
      sql.receive,
      [c.consumer, m.id, m.topic, d.value(c.clock(), 'timestamp')],
      transaction,
    );
    if (received === 0) return { status: 'duplicate', eventId: m.id };
    const result = await work(transaction);
    await c.runner.run(
      sql.processed,
      [c.consumer, m.id, d.value(c.clock(), 'timestamp')],
      transaction,
    );
    return { status: 'processed', eventId: m.id, result };
  };
  if (joined) return c.sequelize.transaction({ transaction: joined }, run);
  // A single-writer database (SQLite): IMMEDIATE takes the one write lock up front, so two
  // consumers of the file queue on it (the busy timeout) rather than one failing to upgrade
  // a read lock.
  const type = c.dialect.capabilities.writeTransaction.type;
  return type
    ? c.sequelize.transaction({ type: Transaction.TYPES[type] }, run)
    : c.sequelize.transaction(run);
}
