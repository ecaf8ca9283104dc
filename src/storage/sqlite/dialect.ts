/**
 * SQLite's spelling of the shared SQL: plain `$n` parameters; lists and tables of rows
 * bound as one JSON text read with `json_each` / `json_extract`; timestamps as epoch
 * milliseconds (INTEGER, which compares and indexes exactly); ids as integers; booleans
 * as 1 / 0; every other column TEXT.
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
import { PHASE_OF_STATUS_SQL } from '../sql/phase.js';

const SQLITE_COLUMNS: Record<ColumnType, string> = {
  sequence: 'INTEGER PRIMARY KEY AUTOINCREMENT',
  bigint: 'INTEGER',
  integer: 'INTEGER',
  uuid: 'TEXT',
  name: 'TEXT',
  status: 'TEXT',
  text: 'TEXT',
  json: 'TEXT',
  timestamp: 'INTEGER',
};

const literal = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/**
 * The event columns' declared types (SQLite keeps the name a column was declared with), and
 * the names that hold each: a uuid is TEXT, as the outbox's own; a timestamp epoch
 * milliseconds, spelled TIMESTAMP (NUMERIC affinity keeps an integer an integer) so it is
 * told apart from an integer column.
 */
const SQLITE_EVENT_COLUMNS: Record<EventColumnType, { ddl: string; holds: readonly string[] }> = {
  text: { ddl: 'TEXT', holds: ['text', 'varchar'] },
  uuid: { ddl: 'TEXT', holds: ['text', 'uuid'] },
  integer: { ddl: 'INTEGER', holds: ['integer', 'int'] },
  bigint: { ddl: 'BIGINT', holds: ['bigint', 'integer'] },
  boolean: { ddl: 'BOOLEAN', holds: ['boolean'] },
  timestamp: { ddl: 'TIMESTAMP', holds: ['timestamp'] },
};

const SQLITE_EVENT_COLUMN_SPELLING: EventColumnSpelling = {
  ddl: (type) => SQLITE_EVENT_COLUMNS[type].ddl,
  holds: (type, found) => SQLITE_EVENT_COLUMNS[type].holds.includes(found.replace(/\(.*$/, '')),
  indexColumn: (name) => name,
  columnsSql: (t) => ({
    sql: 'SELECT name AS name, lower(type) AS type FROM pragma_table_info($1)',
    bind: [eventsTableName(t)],
  }),
  indexesSql: (t) => ({
    sql: 'SELECT name AS name FROM pragma_index_list($1)',
    bind: [eventsTableName(t)],
  }),
};

const ddl: DdlDialect = {
  eventColumns: SQLITE_EVENT_COLUMN_SPELLING,
  columnType: (type) => SQLITE_COLUMNS[type],
  // No default for the current time: every writer supplies it (in epoch milliseconds).
  defaultValue: (v) =>
    v === 'now'
      ? undefined
      : 'json' in v
        ? literal(v.json)
        : typeof v.literal === 'number'
          ? String(v.literal)
          : literal(v.literal),
  partialIndexes: true,
  // No HOT updates to gain, and no `ADD COLUMN IF NOT EXISTS`: the phase is spelled on status.
  phase: PHASE_OF_STATUS_SQL,
  phaseColumn: () => [],
  fillfactor: () => undefined,
  // A column's UNIQUE is an `sqlite_autoindex_…`, which only a rebuild of the table drops
  // (migration 5).
  dropColumnUnique: () => undefined,
  rebuildsToDropColumnUnique: true,
};

/** A value as SQLite stores it. */
function toSqlite(v: string | number | boolean | Date | null | undefined, type: SqlType): unknown {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v.getTime();
  if (type === 'boolean') return v ? 1 : 0;
  if (type === 'bigint' || type === 'integer') return Number(v);
  return v;
}

/** The columns of one `json_each` element `j` (an object per row), by name. */
export const jsonColumns = (columns: readonly { readonly name: string }[], j: string): string =>
  columns.map((c) => `json_extract(${j}.value, '$.${c.name}') AS ${c.name}`).join(', ');

export const sqliteDialect: SqlDialect = {
  name: 'sqlite',
  param: (n) => `$${n}`,
  inList: (column, n) => `${column} IN (SELECT value FROM json_each($${n}))`,
  listIsNull: (n) => `$${n} IS NULL`,
  startsWithAny: (column, n) =>
    `EXISTS (SELECT 1 FROM json_each($${n}) AS p WHERE substr(${column}, 1, length(p.value)) = p.value)`,
  rowsParam: <T>(first: number, alias: string, columns: readonly RowColumn<T>[]) =>
    `(SELECT ${jsonColumns(columns, 'j')} FROM json_each($${first}) AS j) AS ${alias}`,
  rowsParamCount: () => 1,
  bindRows: <T>(rows: readonly T[], columns: readonly RowColumn<T>[]) => [
    JSON.stringify(
      rows.map((r) =>
        Object.fromEntries(columns.map((c) => [c.name, toSqlite(c.value(r), c.type)])),
      ),
    ),
  ],
  insertSkippingDuplicates: (insert, key) => `${insert} ON CONFLICT (${key.join(', ')}) DO NOTHING`,
  countUpTo: (rows, cap) => `(SELECT count(*) FROM (${rows} LIMIT ${cap}) c)`,
  least: (a, b) => `MIN(${a}, ${b})`,
  indexHint: () => '',
  list: (values, type) => (values ? JSON.stringify(values.map((v) => toSqlite(v, type))) : null),
  value: toSqlite,
  ddl,
};
