/**
 * The event's own columns (`defineOutbox({ eventColumns })`, the topic-outbox reference's
 * `extra_field_values`): columns of the application's on the events table, beside the
 * outbox's own, that say what an event is about (an order id, an account) so an operator
 * finds its events by them and a receiver reads them without decoding the payload. Declared
 * here, added by `migrate`, filled by `fire(…, { columns })` and capture's `extend`, carried
 * on the delivered event and narrowing the operator's operations (docs/event-columns.md).
 */
import { z } from 'zod';

/**
 * The types an event column may have: few, so each is spelled the same way on every
 * database and compared by equality in a filter. No JSON: structure belongs in the payload.
 *
 * - `text`: any string; `uuid`: a UUID's text (PostgreSQL `uuid`);
 * - `integer`: a 32-bit integer; `bigint`: a 64-bit one (given as a number, a bigint or a
 *   string of digits, read back as a string, as an event's `sequence` is);
 * - `boolean`; `timestamp`: a `Date` (millisecond precision everywhere).
 */
export type EventColumnType = 'text' | 'integer' | 'bigint' | 'boolean' | 'uuid' | 'timestamp';

/** The column types, for validation and messages. */
export const EVENT_COLUMN_TYPES: readonly EventColumnType[] = [
  'text',
  'integer',
  'bigint',
  'boolean',
  'uuid',
  'timestamp',
];

/** One declared event column: its type, and whether `migrate` indexes it. */
export interface EventColumnDeclaration {
  /** See {@link EventColumnType}. Every event column is nullable: the events before it have none. */
  readonly type: EventColumnType;
  /**
   * Give the column an index of its own (`<prefix>events_col_<name>`), for an operation or a
   * query of yours that finds events by it among many.
   * @defaultValue false
   */
  readonly index?: boolean;
}

/** A declared event column, resolved: its name, type and index. */
export interface ResolvedEventColumn {
  readonly name: string;
  readonly type: EventColumnType;
  readonly index: boolean;
}

/**
 * A value an event column holds, as `fire()` takes it and a delivered event carries it
 * (`bigint` read back as a string; `null` where the event has none).
 */
export type EventColumnValue = string | number | bigint | boolean | Date | null;

/**
 * The events table's own columns (and the generated ones the outbox may add): no event
 * column may take one of their names, since `fire()` writes them itself.
 */
export const RESERVED_EVENT_COLUMNS: readonly string[] = [
  'id',
  'uuid',
  'name',
  'version',
  'payload',
  'headers',
  'ordering_key',
  'idempotency_key',
  'occurred_at',
  'recorded_at',
  'actor',
  'correlation_id',
  'caused_by',
  'retention_seconds',
  'delete_when',
  'suppressed_reason',
  'tenant',
  'sequence',
  'topic',
  'columns',
  // The row number of the insert's JSON rows (PostgreSQL's large batches, MariaDB), beside
  // which the declared columns are read: no column may take its name.
  'ordinal',
];

/**
 * A plain lower-case SQL identifier, short enough for its index's name
 * (`<prefix>events_col_<name>` within the 63 characters PostgreSQL keeps) and the same
 * on every database without quoting.
 */
export const EVENT_COLUMN_NAME = /^[a-z][a-z0-9_]{0,39}$/;

/** The zod schema of `defineOutbox({ eventColumns })`. */
export const eventColumnsSchema = z.record(
  z.string(),
  z.strictObject(
    {
      type: z.enum(EVENT_COLUMN_TYPES as [EventColumnType, ...EventColumnType[]], {
        error: `must be one of ${EVENT_COLUMN_TYPES.map((t) => `"${t}"`).join(', ')}`,
      }),
      index: z.boolean({ error: 'must be true or false' }).optional(),
    },
    { error: "must be { type, index? }, e.g. { type: 'bigint', index: true }" },
  ),
  {
    error:
      "must be an object of { type, index? } by column name, e.g. { order_id: { type: 'bigint' } }",
  },
);

/** Why `name` is no event column name, or undefined when it is one. */
export function columnNameProblem(name: string): string | undefined {
  return EVENT_COLUMN_NAME.test(name)
    ? undefined
    : 'is not a valid column name: lower-case letters, digits and _, starting with a letter, at most 40 characters';
}

/** The declared columns, sorted by name (validated by {@link eventColumnsSchema} first). */
export function resolveEventColumns(
  declared: Readonly<Record<string, EventColumnDeclaration>>,
): ResolvedEventColumn[] {
  return Object.entries(declared)
    .map(([name, c]) => ({ name, type: c.type, index: c.index ?? false }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
