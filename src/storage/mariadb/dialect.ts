/**
 * MariaDB's (and MySQL's) spelling of the shared SQL: `$n` parameters (Sequelize turns them
 * into the drivers' `?`, repeating a value used twice); lists and tables of rows bound as
 * ONE JSON text each, read with `JSON_TABLE` (10.6+, MySQL 8.0.4+), the way SQLite reads
 * them with `json_each`; timestamps as epoch milliseconds in BIGINT columns (exact,
 * indexable, and free of the session time zone a DATETIME would be read in); ids as
 * integers; booleans as 1 / 0. No partial indexes: the delivery row's phase is a stored
 * generated column, and the indexes lead with it (migration.ts), so the claim reads the owed
 * rows only, as PostgreSQL's partial index does.
 *
 * Identifiers are written double-quoted, as everywhere in `storage/sql/`; the runner turns
 * them into backticks (runner.ts), so no session needs `ANSI_QUOTES`.
 */
import type { EventColumnType } from '../../declare/event-columns.js';
import type {
  ColumnType,
  DdlDialect,
  EventColumnSpelling,
  RowColumn,
  SqlDialect,
  SqlType,
} from '../sql/dialect.js';
import { eventsTableName } from '../sql/event-columns.js';
import type { PhaseSql } from '../sql/phase.js';
import { quoteIdent } from '../tables.js';

/** The type a JSON_TABLE column of a list or a rows parameter reads its values as. */
const JSON_TABLE_TYPES: Record<SqlType, string> = {
  bigint: 'BIGINT',
  integer: 'INT',
  // The tables' collation, so a comparison with a column never mixes two.
  text: 'LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
  uuid: 'VARCHAR(36) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
  json: 'LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
  timestamp: 'BIGINT',
  boolean: 'INT',
};

/** The columns of the schema (the migrations table and the inbox's, rendered from sql/schema.ts). */
const columnsOf = (json: string): Record<ColumnType, string> => ({
  sequence: 'BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY',
  bigint: 'BIGINT',
  integer: 'INT',
  uuid: 'VARCHAR(36)',
  name: 'VARCHAR(255)',
  status: 'VARCHAR(16)',
  text: 'TEXT',
  json,
  timestamp: 'BIGINT',
});

const literal = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

/**
 * The phase predicates on the stored generated column `phase` (`'owed'`, `'dead'`,
 * `'orphaned'` or NULL; migration.ts). `<=>` is MariaDB's NULL-safe equality, where
 * PostgreSQL says `IS DISTINCT FROM`.
 */
export const MARIADB_PHASE: PhaseSql = {
  owed: (row) => `${col(row)} = 'owed'`,
  settled: (row) => `NOT (${col(row)} <=> 'owed')`,
  holdsBack: (row) => `${col(row)} IN ('owed','dead')`,
  dead: (row) => `${col(row)} = 'dead'`,
  lost: (row) => `${col(row)} IN ('dead','orphaned')`,
};

function col(row: string | undefined): string {
  return row ? `${row}.phase` : 'phase';
}

/**
 * The event columns' types and the `information_schema` DATA_TYPEs that hold each: a
 * timestamp is epoch milliseconds in a BIGINT, as the outbox's own; a boolean a TINYINT(1).
 */
const MARIADB_EVENT_COLUMNS: Record<EventColumnType, { ddl: string; holds: readonly string[] }> = {
  text: { ddl: 'TEXT', holds: ['text', 'tinytext', 'mediumtext', 'longtext', 'varchar'] },
  uuid: { ddl: 'VARCHAR(36)', holds: ['varchar', 'char', 'uuid'] },
  integer: { ddl: 'INT', holds: ['int'] },
  bigint: { ddl: 'BIGINT', holds: ['bigint'] },
  boolean: { ddl: 'BOOLEAN', holds: ['tinyint'] },
  timestamp: { ddl: 'BIGINT', holds: ['bigint'] },
};

/** The events table of the connection's database. */
const MARIADB_EVENT_COLUMN_SPELLING: EventColumnSpelling = {
  ddl: (type) => MARIADB_EVENT_COLUMNS[type].ddl,
  holds: (type, found) => MARIADB_EVENT_COLUMNS[type].holds.includes(found),
  // A TEXT is indexed by a prefix: 191 characters, the most of utf8mb4 an index key held
  // before MariaDB 10.2's large prefixes (as the outbox's own receiver_key index).
  indexColumn: (name, type) => (type === 'text' ? `${name}(191)` : name),
  columnsSql: (t) => ({
    sql: `SELECT COLUMN_NAME AS name, LOWER(DATA_TYPE) AS type FROM information_schema.columns
      WHERE table_schema = DATABASE() AND table_name = $1`,
    bind: [eventsTableName(t)],
  }),
  indexesSql: (t) => ({
    sql: `SELECT DISTINCT INDEX_NAME AS name FROM information_schema.statistics
      WHERE table_schema = DATABASE() AND table_name = $1`,
    bind: [eventsTableName(t)],
  }),
};

function ddlOf(json: string): DdlDialect {
  const columns = columnsOf(json);
  return {
    eventColumns: MARIADB_EVENT_COLUMN_SPELLING,
    columnType: (type) => columns[type],
    // No default for the current time: every writer supplies it (in epoch milliseconds).
    // A JSON default is an expression, the only default MySQL allows on a text column.
    defaultValue: (v) =>
      v === 'now'
        ? undefined
        : 'json' in v
          ? `(${literal(v.json)})`
          : typeof v.literal === 'number'
            ? String(v.literal)
            : literal(v.literal),
    partialIndexes: false,
    phase: MARIADB_PHASE,
    // The outbox's schema is MariaDB's own (migration.ts): these shared hooks are unused.
    phaseColumn: () => [],
    fillfactor: () => undefined,
    dropColumnUnique: () => undefined,
    addColumnIfNotExists: true,
  };
}

/** A value as MariaDB stores it. */
export function toMariadb(
  v: string | number | boolean | Date | null | undefined,
  type: SqlType,
): unknown {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v.getTime();
  if (type === 'boolean') return v ? 1 : 0;
  if (type === 'timestamp' && typeof v === 'string') return Number(v);
  return v;
}

/**
 * A list bound at `$n` as a derived table of one column `v`, aliased `alias`: the rows of
 * a JSON array.
 */
export const jsonList = (n: number, type: SqlType, alias: string): string =>
  `JSON_TABLE($${n}, '$[*]' COLUMNS (v ${JSON_TABLE_TYPES[type]} PATH '$')) AS ${alias}`;

/** The table of rows bound at `$n` (a JSON array of objects), aliased `alias`. */
export function jsonRows<T>(n: number, alias: string, columns: readonly RowColumn<T>[]): string {
  const cols = columns.map((c) => `${c.name} ${JSON_TABLE_TYPES[c.type]} PATH '$.${c.name}'`);
  return `JSON_TABLE($${n}, '$[*]' COLUMNS (ordinal FOR ORDINALITY, ${cols.join(', ')})) AS ${alias}`;
}

/** Bind rows as {@link jsonRows} reads them: one JSON array of objects. */
export function bindJsonRows<T>(rows: readonly T[], columns: readonly RowColumn<T>[]): string {
  return JSON.stringify(
    rows.map((r) =>
      Object.fromEntries(columns.map((c) => [c.name, toMariadb(c.value(r), c.type)])),
    ),
  );
}

function dialectOf(name: string, json: string): SqlDialect {
  return {
    name,
    param: (n) => `$${n}`,
    inList: (column, n, type) => `${column} IN (SELECT l${n}.v FROM ${jsonList(n, type, `l${n}`)})`,
    listIsNull: (n) => `$${n} IS NULL`,
    startsWithAny: (column, n) =>
      `EXISTS (SELECT 1 FROM ${jsonList(n, 'text', `pfx${n}`)} WHERE LEFT(${column}, CHAR_LENGTH(pfx${n}.v)) = pfx${n}.v)`,
    rowsParam: jsonRows,
    rowsParamCount: () => 1,
    bindRows: <T>(rows: readonly T[], columns: readonly RowColumn<T>[]) => [
      bindJsonRows(rows, columns),
    ],
    insertSkippingDuplicates: (insert, key) =>
      `${insert} ON DUPLICATE KEY UPDATE ${key[0]} = ${key[0]}`,
    // `rows` is a `SELECT 1 FROM …`: counted in place, since the derived table a limit
    // needs could not see the outer row.
    countUpTo: (rows, cap) =>
      `LEAST((${rows.replace(/^\s*SELECT 1\b/, 'SELECT count(*)')}), ${cap})`,
    least: (a, b) => `LEAST(${a}, ${b})`,
    indexHint: (index) => ` FORCE INDEX (${quoteIdent(index)})`,
    list: (values, type) => (values ? JSON.stringify(values.map((v) => toMariadb(v, type))) : null),
    value: toMariadb,
    ddl: ddlOf(json),
  };
}

/**
 * MariaDB: JSON columns are `JSON`, which MariaDB defines as LONGTEXT with a JSON_VALID
 * check: the text is kept as written.
 */
export const mariadbDialect: SqlDialect = dialectOf('mariadb', 'JSON');

/**
 * MySQL: JSON columns are LONGTEXT (MySQL's own JSON type is binary: it sorts an object's
 * keys and rewrites numbers, so a payload would not read back as it was written).
 */
export const mysqlDialect: SqlDialect = dialectOf('mysql', 'LONGTEXT');
