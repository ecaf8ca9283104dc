/**
 * An event's column values: checked when an event is fired or captured (before anything
 * is written), and read back into the delivered event's `columns`.
 */
import type {
  EventColumnType,
  EventColumnValue,
  ResolvedEventColumn,
} from '../declare/event-columns.js';
import { ValidationError } from '../errors/outbox-error.js';

/** The columns an event sets, checked: the declared columns named and their bound values. */
export interface CheckedColumns {
  readonly columns: readonly ResolvedEventColumn[];
  readonly values: readonly (string | number | boolean | Date | null)[];
}

const INT32 = 2 ** 31;
const INT64_MAX = 2n ** 63n - 1n;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What a value of each type must be, for messages. */
const EXPECTED: Record<EventColumnType, string> = {
  text: 'a string',
  uuid: 'a UUID string',
  integer: 'an integer from -2147483648 to 2147483647',
  bigint: 'a 64-bit integer (a safe integer number, a bigint, or a string of digits)',
  boolean: 'true or false',
  timestamp: 'a valid Date',
};

/** The value as bound, or undefined when it is no value of `type`. */
function bound(type: EventColumnType, v: unknown): string | number | boolean | Date | undefined {
  switch (type) {
    case 'text':
      return typeof v === 'string' ? v : undefined;
    case 'uuid':
      return typeof v === 'string' && UUID.test(v) ? v.toLowerCase() : undefined;
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v) && v >= -INT32 && v < INT32
        ? v
        : undefined;
    case 'bigint': {
      let big: bigint | undefined;
      if (typeof v === 'bigint') big = v;
      else if (typeof v === 'number' && Number.isSafeInteger(v)) big = BigInt(v);
      else if (typeof v === 'string' && /^-?\d{1,19}$/.test(v)) big = BigInt(v);
      return big !== undefined && big <= INT64_MAX && big >= -INT64_MAX - 1n
        ? big.toString()
        : undefined;
    }
    case 'boolean':
      return typeof v === 'boolean' ? v : undefined;
    case 'timestamp':
      return v instanceof Date && !Number.isNaN(v.getTime()) ? v : undefined;
  }
}

/**
 * Check the `columns` of one event against the declaration: an object whose every key is a
 * declared column and whose every value is of its type, or `null`.
 *
 * @returns the columns to write, or undefined when `given` is undefined or sets none.
 * @throws {ValidationError} naming the column (an undeclared one, with the declared ones),
 *   what its type takes and what was given.
 */
export function checkColumns(
  declared: readonly ResolvedEventColumn[],
  given: unknown,
  where: string,
): CheckedColumns | undefined {
  if (given === undefined || given === null) return undefined;
  if (typeof given !== 'object' || Array.isArray(given)) {
    throw new ValidationError(
      `${where}: columns must be an object of event column values by name (got ${describe(given)})`,
      { path: 'columns' },
    );
  }
  const columns: ResolvedEventColumn[] = [];
  const values: (string | number | boolean | Date | null)[] = [];
  for (const [name, value] of Object.entries(given)) {
    const column = declared.find((c) => c.name === name);
    if (!column) {
      const known = declared.map((c) => c.name).join(', ');
      throw new ValidationError(
        `${where}: columns.${name} is not a declared event column (${known ? `declared: ${known}` : 'this outbox declares none: defineOutbox({ eventColumns })'}); nothing was written`,
        { path: `columns.${name}` },
      );
    }
    if (value === undefined) continue;
    const v = value === null ? null : bound(column.type, value);
    if (v === undefined) {
      throw new ValidationError(
        `${where}: columns.${name} must be ${EXPECTED[column.type]} or null (a ${column.type} column; got ${describe(value)}); nothing was written`,
        { path: `columns.${name}` },
      );
    }
    columns.push(column);
    values.push(v);
  }
  return columns.length === 0 ? undefined : { columns, values };
}

/**
 * The checked values by column name, as an event's row carries them into its INSERT
 * (`EventRowInput.columnValues`; a declared column not named is written NULL).
 */
export function columnValuesOf(
  checked: CheckedColumns,
): Readonly<Record<string, string | number | boolean | Date | null>> {
  const out: Record<string, string | number | boolean | Date | null> = {};
  checked.columns.forEach((c, i) => {
    out[c.name] = checked.values[i] ?? null;
  });
  return out;
}

function describe(value: unknown): string {
  if (value instanceof Date) return 'an invalid Date';
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object' && value !== null)
    return Array.isArray(value) ? 'an array' : 'an object';
  return String(value);
}

/** One stored value, as the delivered event carries it (the driver's form made one). */
export function readValue(type: EventColumnType, raw: unknown): EventColumnValue {
  if (raw === null || raw === undefined) return null;
  switch (type) {
    case 'text':
    case 'uuid':
      return String(raw);
    case 'integer':
      return Number(raw);
    case 'bigint':
      return String(raw);
    case 'boolean':
      return raw === true || raw === 1 || raw === '1' || raw === 1n || raw === 't';
    case 'timestamp':
      return raw instanceof Date ? raw : new Date(Number(raw));
  }
}

/** Every declared column of one stored row (null where it has none). */
export function readColumns(
  declared: readonly ResolvedEventColumn[],
  row: Readonly<Record<string, unknown>> | undefined,
): Readonly<Record<string, EventColumnValue>> {
  const out: Record<string, EventColumnValue> = {};
  for (const c of declared) out[c.name] = readValue(c.type, row?.[c.name]);
  return Object.freeze(out);
}

/**
 * Every declared column of an event being fired, as its receivers see it: the values
 * `checked` sets, read back the way a stored one is (a bigint as its string), null elsewhere.
 */
export function columnView(
  declared: readonly ResolvedEventColumn[],
  checked: CheckedColumns | undefined,
): Readonly<Record<string, EventColumnValue>> {
  const out: Record<string, EventColumnValue> = {};
  for (const c of declared) out[c.name] = null;
  checked?.columns.forEach((c, i) => {
    out[c.name] = readValue(c.type, checked.values[i]);
  });
  return Object.freeze(out);
}
