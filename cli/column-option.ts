/**
 * `--column name=value` (repeatable): an operation narrowed by the event's own columns
 * (`defineOutbox({ eventColumns })`), as `{ columns: { name: value } }`. The text is read as
 * the declared column's type (`42` for an integer, `true`/`false` for a boolean, an ISO 8601
 * time for a timestamp); the operation then checks it as `fire()` checks a value.
 */
import type { OutboxConfig } from '../src/declare/define-outbox.js';
import type { EventColumnValue } from '../src/declare/event-columns.js';
import { ValidationError } from '../src/errors/outbox-error.js';

/** The option's help line. */
export const COLUMN_FLAG_HELP =
  'only events whose column holds this value, e.g. order_id=42 (repeatable: all must match; defineOutbox({ eventColumns }))';

/**
 * The `--column` flags as an operation's `columns`, or undefined for none.
 * @throws {ValidationError} for a flag without `=`, an undeclared column, or a value its type cannot read.
 */
export function columnsFlag(
  config: OutboxConfig,
  flags: readonly string[] | undefined,
): Record<string, EventColumnValue> | undefined {
  if (flags === undefined || flags.length === 0) return undefined;
  const out: Record<string, EventColumnValue> = {};
  for (const flag of flags) {
    const at = flag.indexOf('=');
    if (at <= 0) {
      throw new ValidationError(
        `--column ${JSON.stringify(flag)} must be name=value, e.g. --column order_id=42`,
        { path: 'column' },
      );
    }
    const name = flag.slice(0, at);
    const text = flag.slice(at + 1);
    const column = config.eventColumns.find((c) => c.name === name);
    // An undeclared name passes through: the operation names it with the declared ones.
    out[name] = column === undefined ? text : read(column.type, text, name);
  }
  return out;
}

function read(type: string, text: string, name: string): EventColumnValue {
  switch (type) {
    case 'integer':
      return /^-?\d+$/.test(text) ? Number(text) : bad(name, type, text);
    case 'boolean':
      return text === 'true' ? true : text === 'false' ? false : bad(name, type, text);
    case 'timestamp': {
      const at = new Date(text);
      return Number.isNaN(at.getTime()) ? bad(name, type, text) : at;
    }
    default:
      return text;
  }
}

function bad(name: string, type: string, text: string): never {
  throw new ValidationError(
    `--column ${name}=${text}: ${name} is a ${type} column; give ${type === 'boolean' ? 'true or false' : type === 'timestamp' ? 'an ISO 8601 time' : 'an integer'}`,
    { path: `columns.${name}` },
  );
}
