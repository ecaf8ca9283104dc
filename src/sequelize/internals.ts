/**
 * Every private Sequelize 6 internal outboxkit relies on, in one place: what it is, what we
 * rely on it for, and where. The fast paths (the relay's one-round-trip handler
 * transaction, the commit watch, capture's before images) need things Sequelize does not
 * type or document; reading them anywhere but here would let a Sequelize release that
 * moves one break us silently. CI runs the storage, fire and capture suites at both ends
 * of the declared peer range (`sequelize@6.21.x` through `npm:` alias `sequelize-oldest`,
 * and the latest 6.x), so a release that moves one fails there first (see `.ci/run`).
 *
 * Public API we use freely and do not list: `sequelize.transaction()`, `getDialect()`,
 * `getQueryInterface()`, `query()`, `models`, `Model.getAttributes()`/`rawAttributes`,
 * `primaryKeyAttributes`, `associations`, hooks, `transaction.afterCommit()`.
 */
import type { Sequelize, Transaction } from 'sequelize';

/** What Sequelize 6 keeps on a transaction and does not type. */
interface TransactionFields {
  /** The instance that made it (lib/transaction.js constructor: `this.sequelize`). */
  readonly sequelize?: Sequelize;
  /** `'commit'` or `'rollback'` once ended; a savepoint too (released or rolled back). */
  readonly finished?: string;
  /** The enclosing transaction of a savepoint (`sequelize.transaction({ transaction })`). */
  readonly parent?: Transaction;
  /** The pool connection it holds, once taken (set by `prepareEnvironment`). */
  readonly connection?: unknown;
  /** The `afterCommit` callbacks, in order; run by `commit()` after the COMMIT succeeded. */
  readonly _afterCommitHooks: ((transaction: Transaction) => unknown)[];
}

const fields = (t: Transaction) => t as unknown as TransactionFields;

/**
 * The Sequelize instance a transaction belongs to — what tells a caller's transaction of
 * another instance (another database) from one of ours. Relies on `transaction.sequelize`.
 */
export function transactionSequelize(transaction: Transaction): Sequelize | undefined {
  return fields(transaction).sequelize;
}

/** How it ended (`commit` or `rollback`), undefined while open. Relies on `finished`. */
export function finishedOf(transaction: Transaction): string | undefined {
  return fields(transaction).finished;
}

/** The enclosing transaction of a savepoint, undefined for a root. Relies on `parent`. */
export function parentOf(transaction: Transaction): Transaction | undefined {
  return fields(transaction).parent;
}

/**
 * The pool connection a transaction holds, if it took one yet. Relies on
 * `transaction.connection` (set before BEGIN; a lean transaction sets it lazily).
 */
export function connectionOf(transaction: Transaction): unknown {
  return fields(transaction).connection;
}

/**
 * What the relay's lean handler transaction (storage/postgres/handler-transaction.ts)
 * drives of a `new Transaction(sequelize, {})` it never `prepareEnvironment`s: it sets the
 * connection and the end itself, and gives the connection back the way `commit()` and
 * `rollback()` do. Relies on `transaction.id` (the log's transaction id), the writable
 * `connection` and `finished`, `_afterCommitHooks`, and `cleanup()` (release to the pool)
 * / `forceCleanup()` (destroy a connection in doubt).
 */
export interface LeanTransactionFields {
  readonly id: string;
  connection?: unknown;
  finished?: string;
  readonly _afterCommitHooks: ((transaction: Transaction) => unknown)[];
  cleanup(): void;
  forceCleanup(): Promise<void>;
}

/** A transaction's fields the lean handler transaction drives ({@link LeanTransactionFields}). */
export function leanFields(transaction: Transaction): LeanTransactionFields {
  return transaction as unknown as LeanTransactionFields;
}

/** The CLS namespace of `Sequelize.useCLS(ns)`: one per process, on the class. */
export interface ClsNamespace {
  get(key: string): unknown;
}

/**
 * The CLS namespace Sequelize keeps, or undefined when the app never enabled CLS. Relies
 * on the static `Sequelize._cls` (set by `Sequelize.useCLS`) and on Sequelize storing the
 * active transaction in it under `'transaction'`.
 */
export function clsNamespace(sequelize: Sequelize): ClsNamespace | undefined {
  return (sequelize.constructor as unknown as { _cls?: ClsNamespace })._cls ?? undefined;
}

/** The transaction Sequelize's CLS namespace carries, if any (see {@link clsNamespace}). */
export function clsTransaction(sequelize: Sequelize): Transaction | undefined {
  return clsNamespace(sequelize)?.get('transaction') as Transaction | undefined;
}

/** What Sequelize keeps of the options an instance was made with. */
export interface InstanceOptions {
  /** The instance's default isolation level (`new Sequelize({ isolationLevel })`). */
  readonly isolationLevel?: unknown;
  /** `logging`: false, or the function (or console.log) each query is logged through. */
  readonly logging?: unknown;
  /** SQLite's file (`storage`), absent on a server dialect. */
  readonly storage?: string;
  /** The server's version once the first connection learnt it; 0 before. */
  readonly databaseVersion?: unknown;
}

/** The instance's options. Relies on `sequelize.options` (untyped in 6.x's d.ts). */
export function instanceOptions(sequelize: Sequelize): InstanceOptions {
  return (sequelize as unknown as { options: InstanceOptions }).options ?? {};
}

/**
 * Log a statement the way Sequelize logs its own, for SQL we send past `query()` (the
 * lean handler transaction). Relies on `sequelize.log(message)`.
 */
export function logAsSequelize(sequelize: Sequelize, message: string): void {
  (sequelize as unknown as { log(message: string): void }).log(message);
}

/**
 * The instance's connection manager (the pool: `getConnection`, `releaseConnection`; on
 * SQLite its map of open databases). Relies on `sequelize.connectionManager`.
 */
export function connectionManager<M>(sequelize: Sequelize): M {
  return (sequelize as unknown as { connectionManager: M }).connectionManager;
}

/**
 * What Sequelize's dialect says it generates. Relies on `sequelize.dialect.supports`
 * (`returnValues`: RETURNING rows handed back from UPDATE/DELETE).
 */
export function dialectSupports(sequelize: Sequelize): { readonly returnValues?: unknown } {
  return (
    (sequelize as unknown as { dialect?: { supports?: { returnValues?: unknown } } }).dialect
      ?.supports ?? {}
  );
}

/**
 * The instance's query interface, whose `commitTransaction` the commit watch wraps (so
 * an outermost COMMIT that succeeded is marked before its afterCommit hooks run). Relies
 * on `queryInterface.commitTransaction(transaction, options)` sending every COMMIT.
 */
export interface CommitRunner {
  commitTransaction(transaction: Transaction, options: unknown): Promise<unknown>;
  [key: symbol]: unknown;
}

/** The query interface of the instance a transaction belongs to, as {@link CommitRunner}. */
export function commitRunnerOf(transaction: Transaction): CommitRunner {
  return (
    transactionSequelize(transaction) as Sequelize
  ).getQueryInterface() as unknown as CommitRunner;
}

/*
 * Model and instance internals capture reads (typed structurally in
 * src/capture/sequelize-model.ts, which names them):
 * - `instance._previousDataValues`: an instance's values as loaded, the before image of
 *   `save()` and `destroy()` with no read.
 * - `instance._options.include`: whether a `create` carries includes (then not unguarded).
 * - `Model._timestampAttributes` (`createdAt`, `updatedAt`, `deletedAt`: paranoid) and
 *   `Model._versionAttribute`: the stamps capture leaves out of `changed`.
 * - `Model._indexes`: the unique indexes an upsert's conflict target may be.
 */
