/**
 * What one dialect is, as the rest of outboxkit sees it: ONE entry per dialect (written in
 * its folder, `storage/<dialect>/entry.ts`, and listed once in `storage/dialects.ts`),
 * carrying what the database can do as data ({@link DatabaseCapabilities}) and the
 * factories everything else needs (the outbox store, the SQL spelling and runner the inbox
 * shares, how connections are configured, how migrations hold their tables).
 *
 * Code outside `storage/<dialect>/` asks an entry's capabilities, never its name: the
 * name is for messages (and for the CLI's `--dialect`).
 */
import type { Sequelize, Transaction } from 'sequelize';
import type { ResolvedEventColumn } from '../declare/event-columns.js';
import type { SqlDialect, SqlRunner } from './sql/dialect.js';
import type { MigrationProfile } from './sql/migrate.js';
import type { DialectCapabilities, OutboxStore } from './store.js';
import type { TableNames } from './tables.js';

/** The statement kinds a `RETURNING` clause may follow. */
export type ReturningKind = 'insert' | 'update' | 'delete';

/**
 * What a database can do, as data. Every entry carries every field (a test holds each
 * entry to it, and to what its SQL really does), so a caller reads a field and never
 * guesses from a name.
 */
export interface DatabaseCapabilities {
  /**
   * `LISTEN` / `NOTIFY`: a write can queue a notification that the server sends exactly
   * when its transaction commits, never for a rollback (PostgreSQL). What
   * `listenNotifyWakeup()` needs, and what lets `fire()`'s statement carry its wakeup.
   */
  readonly listenNotify: boolean;
  /**
   * Per statement kind, whether it takes a `RETURNING` clause that hands back the rows it
   * wrote (PostgreSQL: all three; SQLite 3.35+: all three; MariaDB 10.5+: INSERT and
   * DELETE; MySQL: none).
   */
  readonly returning: { readonly [K in ReturningKind]: boolean };
  /**
   * Per statement kind, whether Sequelize's own model statements on this dialect honour
   * `returning: true` with a RETURNING clause and hand back the rows written (update:
   * `Model.update`, `increment`, a paranoid `destroy`, `restore`; insert: `bulkCreate`;
   * delete: a hard `destroy`). Narrower than {@link returning}: Sequelize 6 writes
   * RETURNING only on PostgreSQL, though SQLite's SQL has it, and never for a hard
   * `destroy`. What capture reads before it leaves a write's rows to RETURNING rather
   * than reading them itself.
   */
  readonly modelReturning: { readonly [K in ReturningKind]: boolean };
  /** `SELECT … FOR UPDATE`: a read can lock the rows it reads until the transaction ends. */
  readonly rowLocks: boolean;
  /**
   * `FOR UPDATE SKIP LOCKED`: a reader passes over rows another transaction locked, so N
   * relays split the queue.
   */
  readonly skipLocked: boolean;
  /** `SAVEPOINT`: a transaction can roll back part of itself (nested transactions). */
  readonly savepoints: boolean;
  /**
   * Schemas inside one database (PostgreSQL's `CREATE SCHEMA`, a `schema.table` name):
   * what the `schema` options of `createOutbox`, `inbox` and the CLI need, and a schema per
   * tenant (`settings.tenancy: 'schema'`, `runRelay({ schemas })`, `migrate({ schemas })`,
   * refused without it). MariaDB and SQLite have none.
   */
  readonly schemas: boolean;
  /** The column type JSON values are stored in, as the DDL spells it (`jsonb`, `TEXT`, `JSON`). */
  readonly jsonType: string;
  /**
   * One writing transaction at a time (SQLite): a second writer waits on the busy timeout,
   * so writes that may overlap queue rather than interleave, and a writing transaction
   * takes the lock up front ({@link writeTransaction}).
   */
  readonly singleWriter: boolean;
  /**
   * The options a transaction that will write is opened with: SQLite `IMMEDIATE` (the write
   * lock taken at `BEGIN`, so two writers queue instead of one failing with SQLITE_BUSY
   * when it upgrades its read lock); none elsewhere.
   */
  readonly writeTransaction: { readonly type?: 'DEFERRED' | 'IMMEDIATE' | 'EXCLUSIVE' };
  /**
   * A boolean SQL expression, read in a `SELECT` of a row an `INSERT … ON CONFLICT DO
   * UPDATE` (an upsert) just wrote in the same transaction, that says whether the upsert
   * updated it (true) rather than inserted it (PostgreSQL: `xmax <> 0`); `null` where the
   * row cannot tell (the caller reads the row before the upsert instead).
   */
  readonly upsertUpdatedSql: string | null;
}

/** The options an outbox store is made with (`createOutbox`'s, as far as storage reads them). */
export interface StoreOptions {
  /**
   * The LISTEN/NOTIFY channel `fire()`'s own statement signals, if any (only where the
   * capabilities have `listenNotify`).
   */
  readonly notifyChannel?: string | undefined;
  /** Whether hot statements may be named prepared statements. @defaultValue true */
  readonly preparedStatements?: boolean | undefined;
  /**
   * The outbox's declared event columns (`defineOutbox({ eventColumns })`): the store's
   * insert writes them in the event's own row (each event's `columnValues`, NULL where it
   * names none), so its statements are built with them, once. None: the insert as it is
   * for an outbox without event columns, byte for byte.
   */
  readonly eventColumns?: readonly ResolvedEventColumn[] | undefined;
}

/** How a migrator (the outbox's or the inbox's) runs on a dialect. */
export interface DialectMigration {
  /**
   * Statements run before a migration, each on its own and outside any transaction
   * (SQLite: `PRAGMA journal_mode=WAL`, which a transaction refuses).
   */
  readonly beforeMigrate: readonly string[];
  /** The current time as a migrations table's `applied_at` holds it, in SQL. */
  readonly nowSql: string;
  /**
   * How a printed migration script's statement is spelled for the database's own client
   * (MariaDB: identifiers in backticks); as the store runs it where undefined.
   */
  readonly scriptSpelling?: ((sql: string) => string) | undefined;
  /** The outbox's migrations on these tables (DDL spelling, prelude, single-writer lock table). */
  profile(tables: TableNames): MigrationProfile;
  /**
   * A transaction no other migrator of the same tables runs at the same time (PostgreSQL:
   * an advisory lock on `lockKey`; SQLite: an IMMEDIATE transaction, the write lock).
   */
  exclusively(
    sequelize: Sequelize,
    runner: SqlRunner,
    lockKey: string,
  ): (work: (transaction: Transaction) => Promise<void>) => Promise<void>;
}

/** How the CLI reaches a database of this dialect, as data. */
export interface DialectConnection {
  /** How a URL of this dialect starts (`postgres://`, `sqlite:`); the first is the canonical one. */
  readonly urlPrefixes: readonly string[];
  /**
   * Whether the database is a file (Sequelize's `storage` option, SQLite) rather than a
   * server's database at a host and port.
   */
  readonly file: boolean;
  /** The server's port when a URL names none; undefined for a file database. */
  readonly defaultPort: number | undefined;
  /**
   * A `SELECT` of one row whose `schema` column is the schema unqualified names resolve
   * to, where the dialect has schemas; undefined elsewhere.
   */
  readonly currentSchemaSql: string | undefined;
  /**
   * Sequelize's `dialectOptions` for a connection opened from a URL that must be made within
   * `connectTimeoutMs` (node-postgres: `connectionTimeoutMillis`; a file database: none).
   */
  dialectOptions(connectTimeoutMs: number | undefined): Readonly<Record<string, unknown>>;
}

/** One dialect, as the registry lists it. */
export interface DialectEntry<N extends string = string> {
  /** Sequelize's name of the dialect (`sequelize.getDialect()`), and the CLI's `--dialect`. */
  readonly name: N;
  /** The database's name as people write it, for messages (`PostgreSQL`). */
  readonly title: string;
  readonly capabilities: DatabaseCapabilities;
  /** How its statements write and bind parameters, lists and column types. */
  readonly sql: SqlDialect;
  /** How statements run on a Sequelize of this dialect (row counts included). */
  runner(sequelize: Sequelize): SqlRunner;
  /**
   * Configure the connections of `sequelize` before anything runs on them (SQLite: a busy
   * timeout on every connection). Idempotent: the outbox and the inbox both call it.
   */
  configureConnections(sequelize: Sequelize): void;
  /** The outbox store on `sequelize` for `tables`. */
  createStore(sequelize: Sequelize, tables: TableNames, options?: StoreOptions): OutboxStore;
  readonly migration: DialectMigration;
  readonly connection: DialectConnection;
  /**
   * Whether an error a statement raised says a table does not exist (PostgreSQL SQLSTATE
   * `42P01`, SQLite's `no such table`): read only AFTER a statement failed, so `fire()`
   * can say "run `npx outbox migrate`" without a query of its own on the hot path.
   */
  missingTable(error: unknown): boolean;
}

/**
 * What an outbox store tells the relay about itself (see {@link DialectCapabilities}),
 * derived from the database's capabilities, so the two never disagree: the queue splits
 * across relays only with SKIP LOCKED and more than one writer, and the wakeup rides in the
 * write exactly where LISTEN/NOTIFY exists.
 */
export function storeCapabilities(c: DatabaseCapabilities): DialectCapabilities {
  return Object.freeze({
    splitsQueue: c.skipLocked && !c.singleWriter,
    writers: c.singleWriter ? 'one' : 'many',
    handlerTransaction: c.writeTransaction,
    notifiesInWrite: c.listenNotify,
  });
}
