/**
 * PostgreSQL's spelling of the shared SQL: typed `$n::type` parameters, lists as arrays
 * (`= ANY($n::bigint[])`), tables of rows as parallel arrays through `unnest`, JSONB and
 * timestamptz columns, partial indexes. Values bind as they are (Dates, text ids).
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
import { PHASE_COLUMN, PHASE_OF_STATUS } from '../sql/phase.js';

const PG_TYPES: Record<SqlType, string> = {
  bigint: 'bigint',
  integer: 'int',
  text: 'text',
  uuid: 'uuid',
  json: 'jsonb',
  timestamp: 'timestamptz',
  boolean: 'boolean',
};

const PG_COLUMNS: Record<ColumnType, string> = {
  sequence: 'bigserial PRIMARY KEY',
  bigint: 'bigint',
  integer: 'integer',
  uuid: 'uuid',
  name: 'varchar(255)',
  status: 'varchar(16)',
  text: 'text',
  json: 'jsonb',
  timestamp: 'timestamptz',
};

/** The event columns' types, and the `information_schema` data types that hold each. */
const PG_EVENT_COLUMNS: Record<EventColumnType, { ddl: string; holds: readonly string[] }> = {
  text: { ddl: 'text', holds: ['text', 'character varying'] },
  uuid: { ddl: 'uuid', holds: ['uuid'] },
  integer: { ddl: 'integer', holds: ['integer'] },
  bigint: { ddl: 'bigint', holds: ['bigint'] },
  boolean: { ddl: 'boolean', holds: ['boolean'] },
  timestamp: { ddl: 'timestamptz', holds: ['timestamp with time zone'] },
};

/** The events table of the outbox's schema (else the search path's first). */
const PG_EVENT_COLUMN_SPELLING: EventColumnSpelling = {
  ddl: (type) => PG_EVENT_COLUMNS[type].ddl,
  holds: (type, found) => PG_EVENT_COLUMNS[type].holds.includes(found),
  indexColumn: (name) => name,
  columnsSql: (t) => ({
    sql: `SELECT column_name AS name, data_type AS type FROM information_schema.columns
      WHERE table_schema = COALESCE($1::text, current_schema()) AND table_name = $2::text`,
    bind: [t.schema ?? null, eventsTableName(t)],
  }),
  indexesSql: (t) => ({
    sql: `SELECT indexname AS name FROM pg_indexes
      WHERE schemaname = COALESCE($1::text, current_schema()) AND tablename = $2::text`,
    bind: [t.schema ?? null, eventsTableName(t)],
  }),
};

const ddl: DdlDialect = {
  eventColumns: PG_EVENT_COLUMN_SPELLING,
  columnType: (type) => PG_COLUMNS[type],
  defaultValue: (v) =>
    v === 'now'
      ? 'now()'
      : 'json' in v
        ? `${literal(v.json)}::jsonb`
        : typeof v.literal === 'number'
          ? String(v.literal)
          : literal(v.literal),
  partialIndexes: true,
  phase: PHASE_COLUMN,
  // Generated from status, so whoever writes a status keeps it right. Adding it rewrites
  // the table once (a STORED generated column cannot be added without computing it).
  phaseColumn: (table) => [
    `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS phase varchar(8) GENERATED ALWAYS AS (${PHASE_OF_STATUS}) STORED`,
  ],
  addColumnIfNotExists: true,
  fillfactor: (table, percent) => `ALTER TABLE ${table} SET (fillfactor = ${percent})`,
  // The constraint's name is PostgreSQL's choice (`<table>_<column>_key`, truncated to 63
  // characters), so it is looked up. A DO block with its body as a plain string literal:
  // a dollar-quoted one would be rewritten by Sequelize's bind-parameter parser.
  dropColumnUnique: (table, column) =>
    `DO ${literal(
      `DECLARE c name; BEGIN SELECT conname INTO c FROM pg_constraint WHERE conrelid = ${literal(table)}::regclass AND contype = 'u' AND conkey = ARRAY[(SELECT attnum FROM pg_attribute WHERE attrelid = ${literal(table)}::regclass AND attname = ${literal(column)})]; IF c IS NOT NULL THEN EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', ${literal(table)}, c); END IF; END`,
    )}`,
};

/** A string literal (schema text only, never user input). */
function literal(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

/** The PostgreSQL array type of a value type: `bigint[]`. */
export const pgArray = (type: SqlType): string => `${PG_TYPES[type]}[]`;

export const postgresDialect: SqlDialect = {
  name: 'postgres',
  param: (n, type) => `$${n}::${PG_TYPES[type]}`,
  inList: (column, n, type) => `${column} = ANY($${n}::${pgArray(type)})`,
  listIsNull: (n, type) => `$${n}::${pgArray(type)} IS NULL`,
  startsWithAny: (column, n) =>
    `EXISTS (SELECT 1 FROM unnest($${n}::text[]) AS p(v) WHERE left(${column}, length(p.v)) = p.v)`,
  rowsParam: <T>(first: number, alias: string, columns: readonly RowColumn<T>[]) =>
    `unnest(${columns.map((c, i) => `$${first + i}::${pgArray(c.type)}`).join(', ')})
           AS ${alias}(${columns.map((c) => c.name).join(', ')})`,
  rowsParamCount: (columns) => columns.length,
  bindRows: <T>(rows: readonly T[], columns: readonly RowColumn<T>[]) =>
    columns.map((c) => rows.map((r) => c.value(r))),
  insertSkippingDuplicates: (insert, key) => `${insert} ON CONFLICT (${key.join(', ')}) DO NOTHING`,
  countUpTo: (rows, cap) => `(SELECT count(*) FROM (${rows} LIMIT ${cap}) c)`,
  least: (a, b) => `LEAST(${a}, ${b})`,
  indexHint: () => '',
  list: (values) => (values ? [...values] : null),
  value: (v) => v ?? null,
  ddl,
};
