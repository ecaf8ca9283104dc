/**
 * What differs between the SQL dialects, as a small interface: how a parameter is written
 * and bound, how a list or a table of rows is passed in one parameter, and how a column
 * type is spelled. Statements written once in `storage/sql/` take a {@link SqlDialect} and
 * read the same on every database; `storage/postgres/` and `storage/sqlite/` hold only the
 * dialect objects, the connection runners and the operations whose algorithm really
 * differs (PostgreSQL's one-statement insert with key locks and NOTIFY, its SKIP LOCKED
 * claim; SQLite's chunked insert and its two-step claim).
 *
 * A THIRD DIALECT (MariaDB 10.6+) is a folder `storage/mariadb/` beside those two:
 * - `dialect.ts`: a {@link SqlDialect} (`?` placeholders or named binds, lists through
 *   `JSON_TABLE`, `partialIndexes: false`, so the DDL renderer drops the `WHERE` of the
 *   partial indexes, and backtick identifiers passed to `tableNames`);
 * - `runner.ts`: row counts from `affectedRows`, since MariaDB has no `UPDATE … RETURNING`
 *   (the shared renew/release/acknowledge statements return no rows for that reason);
 * - `statements.ts` + `store.ts`: insert with `INSERT IGNORE … RETURNING` (10.5+), the claim
 *   as `SELECT … FOR UPDATE SKIP LOCKED` of {@link claimCandidates} then an `UPDATE` of those
 *   ids in one short transaction, the record as a join on `JSON_TABLE`;
 * - `capabilities.ts` (its `DatabaseCapabilities`: no LISTEN/NOTIFY, RETURNING on INSERT and
 *   DELETE, SKIP LOCKED, no schemas; so the store splits the queue and has no single-writer
 *   lock) and `entry.ts` (its `DialectEntry`), listed once in `storage/dialects.ts`;
 *   migrations locked with `GET_LOCK()`.
 * The migrate loop, the schema description, the conditions, the SET clause of the record
 * and the idempotency tail are reused as they are.
 */
import type { Transaction } from 'sequelize';
import type { EventColumnType } from '../../declare/event-columns.js';
import type { Row } from '../rows.js';
import type { TableNames } from '../tables.js';
import type { PhaseSql } from './phase.js';

/** The value types a parameter, a list or a column of a rows parameter carries. */
export type SqlType = 'bigint' | 'integer' | 'text' | 'uuid' | 'json' | 'timestamp' | 'boolean';

/** One column of a table of rows bound as parameters (see {@link SqlDialect.rowsParam}). */
export interface RowColumn<T> {
  readonly name: string;
  readonly type: SqlType;
  /** The column's value for one row, as the application holds it (Date, string id …). */
  readonly value: (row: T) => string | number | boolean | Date | null;
}

/** How a dialect writes and binds what its statements share. */
export interface SqlDialect {
  /** The dialect's name, for messages. */
  readonly name: string;
  /** Parameter `$n`, typed where the database cannot infer it (PostgreSQL `$1::text`). */
  param(n: number, type: SqlType): string;
  /** A predicate: `column` is one of the list bound at `$n` (bind it with {@link list}). */
  inList(column: string, n: number, type: SqlType): string;
  /** A predicate: the list bound at `$n` is NULL, i.e. that filter is off. */
  listIsNull(n: number, type: SqlType): string;
  /**
   * A predicate: the text `column` starts with one of the texts of the list bound at `$n`,
   * compared as plain characters (never `LIKE`, whose `_` and `%` are wildcards).
   */
  startsWithAny(column: string, n: number): string;
  /**
   * A table of rows bound from parameter `$first` on, aliased `alias` with `columns`:
   * PostgreSQL `unnest($1::bigint[], $2::text[], …)` (one array per column), SQLite
   * `json_each($1)` (one JSON array of objects). {@link rowsParamCount} says how many
   * parameters it takes; {@link bindRows} produces them.
   */
  rowsParam<T>(first: number, alias: string, columns: readonly RowColumn<T>[]): string;
  rowsParamCount(columns: readonly RowColumn<unknown>[]): number;
  bindRows<T>(rows: readonly T[], columns: readonly RowColumn<T>[]): unknown[];
  /**
   * `insert` (an `INSERT INTO t (…) VALUES …`) skipping a row whose unique key `key`
   * exists, without an error, so the caller's transaction goes on: PostgreSQL and SQLite
   * append `ON CONFLICT (key) DO NOTHING`, MariaDB `ON DUPLICATE KEY UPDATE` of a key
   * column to itself (no `ON CONFLICT`; unlike `INSERT IGNORE`, no other error becomes a
   * warning). Either way the statement changes 0 rows for a duplicate.
   */
  insertSkippingDuplicates(insert: string, key: readonly string[]): string;
  /**
   * How many rows the correlated `SELECT 1 FROM …` `rows` finds, counting no further than
   * `cap`: PostgreSQL and SQLite count a derived table limited to `cap`; MariaDB, which
   * takes no outer reference inside a derived table, counts them all and caps the count.
   */
  countUpTo(rows: string, cap: string): string;
  /** The smaller of two expressions (`LEAST` / two-argument `MIN`). */
  least(a: string, b: string): string;
  /**
   * What follows a table reference that must be read through the index `name` (the whole,
   * prefixed name): MariaDB's `FORCE INDEX (name)`, nothing on PostgreSQL and SQLite. Only
   * where a dialect's planner was shown to pick another index: MariaDB's statistics are
   * taken when a new outbox's tables are empty, and with them it read the ordering check
   * through deliveries_succeeded (2,500 rows per candidate) instead of deliveries_ordering.
   */
  indexHint(name: string): string;
  /** Bind a list (or NULL, when the filter is off). */
  list(values: readonly (string | number)[] | null | undefined, type: SqlType): unknown;
  /** Bind one value of a type (timestamps: Date or epoch milliseconds; ids: text or integer). */
  value(v: string | number | boolean | Date | null | undefined, type: SqlType): unknown;
  /** How the schema's column types are spelled. */
  readonly ddl: DdlDialect;
}

/** The column types of the schema description (`sql/schema.ts`). */
export type ColumnType =
  | 'sequence' // an auto-incrementing bigint primary key
  | 'bigint'
  | 'integer'
  | 'uuid'
  | 'name' // a short identifier: varchar(255)
  | 'status' // a very short word: varchar(16)
  | 'text'
  | 'json'
  | 'timestamp';

/** A column default, written by the dialect. */
export type ColumnDefault =
  | { readonly literal: string | number }
  | { readonly json: string }
  /** The current time; a dialect without a cheap expression for it leaves the column bare. */
  | 'now';

/** How a dialect spells the schema. */
export interface DdlDialect {
  /** The type of a column; for `sequence`, the whole `… PRIMARY KEY` clause. */
  columnType(type: ColumnType): string;
  /** A default's SQL, or undefined to write none. */
  defaultValue(value: ColumnDefault): string | undefined;
  /** Whether `CREATE INDEX … WHERE` exists (MariaDB: no; the renderer drops the WHERE). */
  readonly partialIndexes: boolean;
  /**
   * How a delivery row's phase is read (sql/phase.ts): by the partial indexes of migration 4
   * and by every query that reads them.
   */
  readonly phase: PhaseSql;
  /**
   * The statements that give the deliveries table `table` (escaped) the column its
   * {@link phase} reads, idempotent; none where the phase is spelled on `status`.
   */
  phaseColumn(table: string): readonly string[];
  /**
   * The statement that has each new heap page of `table` (escaped) filled to `percent` %
   * only, leaving the rest for updates of its rows (PostgreSQL's `fillfactor`), or
   * undefined for a database without such a setting.
   */
  fillfactor(table: string, percent: number): string | undefined;
  /**
   * The statement that drops the unique constraint a column-level `UNIQUE` of
   * `CREATE TABLE` made on `column` of `table` (escaped), whatever the database named it,
   * and nothing when there is none; undefined where the database cannot drop it without
   * rebuilding the table (SQLite's `sqlite_autoindex_…`).
   */
  dropColumnUnique(table: string, column: string): string | undefined;
  /**
   * Set where {@link dropColumnUnique} cannot drop a column's UNIQUE (SQLite): migration 5
   * then rebuilds the table without it (schema.ts, `renderRebuild`), keeping its rows, its
   * AUTOINCREMENT counter and its indexes. Absent elsewhere, where migration 5 is nothing.
   */
  readonly rebuildsToDropColumnUnique?: true;
  /**
   * Whether `ALTER TABLE … ADD COLUMN IF NOT EXISTS` exists (PostgreSQL, MariaDB), so an
   * added column's statement is idempotent on its own; SQLite's is not, and runs once,
   * under the migrations table's record of its version.
   */
  readonly addColumnIfNotExists?: boolean;
  /** How the application's event columns are spelled and introspected (sql/event-columns.ts). */
  readonly eventColumns: EventColumnSpelling;
}

/** How a dialect spells and reads the event columns. */
export interface EventColumnSpelling {
  /** The column type of `ALTER TABLE … ADD COLUMN`. */
  ddl(type: EventColumnType): string;
  /** Whether a column the database describes as `found` (lower-cased) holds `type`. */
  holds(type: EventColumnType, found: string): boolean;
  /** The index's column expression (MariaDB indexes a TEXT by a prefix of it). */
  indexColumn(name: string, type: EventColumnType): string;
  /** The columns of the events table: rows of `name`, `type`. */
  columnsSql(t: TableNames): { readonly sql: string; readonly bind: readonly unknown[] };
  /** The index names on the events table: rows of `name`. */
  indexesSql(t: TableNames): { readonly sql: string; readonly bind: readonly unknown[] };
}

/**
 * How a store runs statements on its connection. `exec` returns the number of rows a
 * statement changed, however the driver reports it (PostgreSQL's rowCount, SQLite's
 * `RETURNING`, MariaDB's affectedRows), so shared UPDATE statements return no rows.
 */
export interface SqlRunner {
  select<T = Row>(sql: string, bind: unknown[], transaction?: Transaction | null): Promise<T[]>;
  exec(sql: string, bind: unknown[], transaction?: Transaction | null): Promise<number>;
  /** Run a statement for its effect only (DDL, an INSERT that returns nothing). */
  run(sql: string, bind: unknown[], transaction?: Transaction | null): Promise<void>;
}
