import type { Sequelize, Transaction } from 'sequelize';
import { ConfigurationError, ValidationError } from '../errors/outbox-error.js';
import {
  clsTransaction,
  finishedOf,
  instanceOptions,
  parentOf,
  transactionSequelize,
} from '../sequelize/internals.js';

/** The outermost transaction of a savepoint (itself for a transaction that is no savepoint). */
export function rootOf(transaction: Transaction): Transaction {
  let t = transaction;
  for (let parent = parentOf(t); parent; parent = parentOf(t)) t = parent;
  return t;
}

export { finishedOf, parentOf };

/**
 * What a call that joins the caller's transaction says when it refuses one: each call
 * names itself and what would go wrong, in its own words.
 */
export interface JoinRefusals {
  /** The transaction belongs to another Sequelize instance than the call's. */
  readonly foreign: string;
  /** It, or one enclosing it, has already ended (`finished`: `commit` or `rollback`). */
  readonly ended: (finished: string) => string;
  /** The call itself, as the refusal of another instance's CLS transaction names it. */
  readonly call: string;
}

/**
 * THE join of the caller's transaction, shared by `fire()` and `inbox.handle()` (and what
 * builds on `fire()`): the one passed explicitly, else the one Sequelize's CLS namespace
 * carries (when the application enabled `Sequelize.useCLS`) unless it has ended, else none
 * — and the call then opens its own. Either may be a savepoint. An explicit `null` says
 * "none": the CLS transaction is not joined (as Sequelize's own `transaction: null` does).
 *
 * Sequelize's CLS namespace is one per process, shared by every Sequelize instance: inside
 * `sequelizeB.transaction(…)` it carries B's transaction to a call of an outbox made with
 * A. Joining it would write A's rows into B's database, silently. That transaction is
 * never joined; the call refuses instead, naming both, as the reference's `enqueue()`
 * does when another connection has the open transaction (committing on its own instead
 * would cut the event loose from the change the caller meant it to go with).
 *
 * @throws {ValidationError} (path `options.transaction`, words from `refusals`) for a
 * transaction of another Sequelize instance (the write would commit on a different
 * connection than the change it goes with), or one that (or whose outermost transaction)
 * has already ended.
 * @throws {ConfigurationError} (path `options.transaction`) when no transaction is passed
 * and the CLS namespace carries a live transaction of another Sequelize instance.
 */
export function joinTransaction(
  sequelize: Sequelize,
  explicit: Transaction | null | undefined,
  refusals: JoinRefusals,
): Transaction | undefined {
  if (explicit === null) return undefined;
  if (explicit) {
    if (transactionSequelize(explicit) !== sequelize) {
      throw new ValidationError(refusals.foreign, { path: 'options.transaction' });
    }
    const finished = ended(explicit);
    if (finished) {
      throw new ValidationError(refusals.ended(finished), { path: 'options.transaction' });
    }
    return explicit;
  }
  const ambient = clsTransaction(sequelize);
  if (!ambient || ended(ambient)) return undefined;
  const owner = transactionSequelize(ambient);
  if (owner !== sequelize) {
    throw new ConfigurationError(
      `${refusals.call}: the transaction Sequelize's CLS namespace carries belongs to another Sequelize instance (${describeSequelize(owner)}) than this one's (${describeSequelize(sequelize)}); joining it would write into the other database. Pass { transaction } of this instance's Sequelize, or { transaction: null } to commit on its own.`,
      { path: 'options.transaction' },
    );
  }
  return ambient;
}

/** A Sequelize instance as a refusal names it: dialect, database, and where it lives. */
export function describeSequelize(instance: Sequelize | undefined): string {
  if (!instance || typeof instance.getDialect !== 'function') return 'an unknown instance';
  const dialect = instance.getDialect();
  // A file database (SQLite) is its storage; a server's is a database at a host.
  const { storage } = instanceOptions(instance);
  if (storage !== undefined) return `${dialect} ${storage || ':memory:'}`;
  const { database, host, port } = instance.config;
  return `${dialect} database ${JSON.stringify(database ?? '')}${host ? ` at ${host}${port ? `:${port}` : ''}` : ''}`;
}

/** `fire()`'s refusals of a transaction it cannot write in. */
const FIRE_REFUSALS: JoinRefusals = {
  call: 'outbox.fire()',
  foreign:
    "options.transaction belongs to another Sequelize instance than the outbox was created with; the event would not commit with your change. Pass a transaction of the outbox's Sequelize, or create the outbox with that instance.",
  ended: (finished) =>
    `options.transaction has already ended (${finished}); fire inside a live transaction`,
};

/**
 * The transaction `fire()` writes in (see {@link joinTransaction}); with none, `fire()`
 * commits at once in a transaction of its own.
 *
 * @throws {ValidationError} for a transaction of another Sequelize instance (the event
 * would commit on a different connection than the change it reports), or one that (or
 * whose outermost transaction) has already ended.
 */
export function resolveTransaction(
  sequelize: Sequelize,
  explicit: Transaction | null | undefined,
): Transaction | undefined {
  return joinTransaction(sequelize, explicit, FIRE_REFUSALS);
}

/** How the transaction, or one enclosing it, ended; undefined while all are open. */
function ended(transaction: Transaction): string | undefined {
  for (let t: Transaction | undefined = transaction; t; t = parentOf(t)) {
    const finished = finishedOf(t);
    if (finished) return finished;
  }
  return undefined;
}
