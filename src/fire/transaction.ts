import type { Sequelize, Transaction } from 'sequelize';
import { ValidationError } from '../errors/outbox-error.js';

/** What Sequelize 6 keeps on a transaction and does not type. */
interface TransactionInternals {
  readonly sequelize?: unknown;
  /** `commit` or `rollback` once ended (a savepoint too: released or rolled back). */
  readonly finished?: string;
  /** The enclosing transaction of a savepoint (`sequelize.transaction({ transaction })`). */
  readonly parent?: Transaction;
}

const internals = (t: Transaction) => t as unknown as TransactionInternals;

/** The outermost transaction of a savepoint (itself for a transaction that is no savepoint). */
export function rootOf(transaction: Transaction): Transaction {
  let t = transaction;
  for (let parent = internals(t).parent; parent; parent = internals(t).parent) t = parent;
  return t;
}

/** The enclosing transaction of a savepoint, undefined for a root. */
export function parentOf(transaction: Transaction): Transaction | undefined {
  return internals(transaction).parent;
}

/** How it ended (`commit` or `rollback`), undefined while open. */
export function finishedOf(transaction: Transaction): string | undefined {
  return internals(transaction).finished;
}

/**
 * The transaction `fire()` writes in: the one passed explicitly, else the one Sequelize's
 * CLS namespace carries (when the application enabled `Sequelize.useCLS`), else none — and
 * `fire()` then commits at once in a transaction of its own. Either may be a savepoint.
 *
 * @throws {ValidationError} for a transaction of another Sequelize instance (the event
 * would commit on a different connection than the change it reports), or one that (or
 * whose outermost transaction) has already ended.
 */
export function resolveTransaction(
  sequelize: Sequelize,
  explicit: Transaction | null | undefined,
): Transaction | undefined {
  if (explicit) {
    if (internals(explicit).sequelize !== sequelize) {
      throw new ValidationError(
        "options.transaction belongs to another Sequelize instance than the outbox was created with; the event would not commit with your change. Pass a transaction of the outbox's Sequelize, or create the outbox with that instance.",
        { path: 'options.transaction' },
      );
    }
    const finished = ended(explicit);
    if (finished) {
      throw new ValidationError(
        `options.transaction has already ended (${finished}); fire inside a live transaction`,
        { path: 'options.transaction' },
      );
    }
    return explicit;
  }
  const cls = (sequelize.constructor as unknown as { _cls?: { get(key: string): unknown } })._cls;
  const ambient = cls?.get('transaction') as Transaction | undefined;
  return ambient && !ended(ambient) ? ambient : undefined;
}

/** How the transaction, or one enclosing it, ended; undefined while all are open. */
function ended(transaction: Transaction): string | undefined {
  for (let t: Transaction | undefined = transaction; t; t = parentOf(t)) {
    const finished = finishedOf(t);
    if (finished) return finished;
  }
  return undefined;
}
