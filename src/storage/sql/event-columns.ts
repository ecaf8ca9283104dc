/**
 * The statements of the event's own columns (`defineOutbox({ eventColumns })`), written
 * once for every dialect: reading which columns and indexes the events table has, adding the
 * declared ones that are missing, reading an event's values back for the events a claim
 * took, and finding the events that hold given values (an operation's
 * `columns` filter). What differs per database (the type spellings, how a table is
 * introspected) is the dialect's {@link EventColumnSpelling}.
 *
 * An event's values are written in its INSERT, among the insert's columns
 * (sql/columns.ts `eventInsertColumns`). None of these runs for an outbox that declares no
 * column: the claim, the insert and every operation's statement stay exactly what they are.
 */
import type { EventColumnType, ResolvedEventColumn } from '../../declare/event-columns.js';
import { quoteIdent, type TableNames } from '../tables.js';
import type { EventColumnSpelling, SqlDialect, SqlType } from './dialect.js';

/** The bound type of a column's values. */
export const SQL_TYPE_OF: Record<EventColumnType, SqlType> = {
  text: 'text',
  uuid: 'uuid',
  integer: 'integer',
  bigint: 'bigint',
  boolean: 'boolean',
  timestamp: 'timestamp',
};

/** The unescaped name of the events table (its prefix included), for introspection. */
export const eventsTableName = (t: TableNames): string => `${t.prefix}events`;

/** The name of a declared column's index (after the table prefix): `events_col_<name>`. */
export const eventColumnIndexName = (t: TableNames, name: string): string =>
  `${t.prefix}events_col_${name}`;

/** `ALTER TABLE … ADD COLUMN <name> <type>`: nullable, no default (a catalogue change only). */
export function addEventColumnSql(
  t: TableNames,
  s: EventColumnSpelling,
  c: ResolvedEventColumn,
): string {
  return `ALTER TABLE ${t.events} ADD COLUMN ${c.name} ${s.ddl(c.type)}`;
}

/** `CREATE INDEX … ON events (<name>)`, run only where introspection found no such index. */
export function createEventColumnIndexSql(
  t: TableNames,
  s: EventColumnSpelling,
  c: ResolvedEventColumn,
): string {
  return `CREATE INDEX ${quoteIdent(eventColumnIndexName(t, c.name))} ON ${t.events} (${s.indexColumn(c.name, c.type)})`;
}

/**
 * The declared columns of the events $1 (a list of sequences): rows of `id` and each
 * column, through the primary key.
 */
export function readEventColumnsSql(
  t: TableNames,
  d: SqlDialect,
  columns: readonly ResolvedEventColumn[],
): string {
  return `SELECT e.id AS id, ${columns.map((c) => `e.${c.name} AS ${c.name}`).join(', ')}
      FROM ${t.events} e WHERE ${d.inList('e.id', 1, 'bigint')}`;
}

/**
 * The sequences of the events whose columns equal the values given (`NULL` matched by
 * `IS NULL`), in sequence order. Params: $1..$n the non-null values in `equal`'s order.
 * Reads a declared column's index where it has one; else the events table.
 */
export function eventsWithColumnsSql(
  t: TableNames,
  d: SqlDialect,
  equal: readonly { readonly column: ResolvedEventColumn; readonly isNull: boolean }[],
): string {
  let n = 0;
  const where = equal.map(({ column: c, isNull }) =>
    isNull ? `e.${c.name} IS NULL` : `e.${c.name} = ${d.param(++n, SQL_TYPE_OF[c.type])}`,
  );
  return `SELECT e.id AS id FROM ${t.events} e WHERE ${where.join(' AND ')} ORDER BY e.id`;
}
