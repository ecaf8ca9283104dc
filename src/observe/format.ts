import {
  errorSummary,
  isErrorLike,
  type SerializedError,
  serializeError,
} from './serialize-error.js';

/** How a formatter writes errors: with their stacks (a debug logger) or without. */
export interface FormatOptions {
  readonly stacks: boolean;
}

/**
 * A log entry's fields as plain JSON data: errors as {@link SerializedError}, dates as ISO
 * strings, bigints as strings, a cycle as `"[Circular]"`, functions and symbols dropped.
 */
export function plainFields(
  fields: Record<string, unknown> | undefined,
  options: FormatOptions,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!fields) return out;
  const seen = new WeakSet<object>();
  for (const [key, value] of Object.entries(fields)) {
    const plain = toPlain(value, options, seen, 0);
    if (plain !== undefined) out[key] = plain;
  }
  return out;
}

/** The deepest nesting written; deeper values become `"[Object]"`. */
const MAX_NESTING = 6;

function toPlain(
  value: unknown,
  options: FormatOptions,
  seen: WeakSet<object>,
  depth: number,
): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'bigint') return value.toString();
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol')
    return undefined;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (isErrorLike(value)) return serializeError(value, options);
  if (typeof value !== 'object') return String(value);
  if (seen.has(value)) return '[Circular]';
  if (depth >= MAX_NESTING) return Array.isArray(value) ? '[Array]' : '[Object]';
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((v) => toPlain(v, options, seen, depth + 1) ?? null);
    if (value instanceof Map || value instanceof Set)
      return toPlain([...value], options, seen, depth + 1);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const plain = toPlain(v, options, seen, depth + 1);
      if (plain !== undefined) out[k] = plain;
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

/**
 * An entry for a person: the message, then `key=value` pairs (logfmt's quoting), errors as
 * `Name: message [code] (cause: …)` — never an `util.inspect` dump. With `stacks`, each
 * error's stack follows on indented lines.
 */
export function textEntry(
  message: string,
  fields: Record<string, unknown> | undefined,
  options: FormatOptions,
): string {
  const plain = plainFields(fields, options);
  const pairs: string[] = [];
  const stacks: string[] = [];
  for (const [key, value] of Object.entries(plain)) {
    const raw = fields?.[key];
    if (isErrorLike(raw)) {
      const error = value as SerializedError;
      pairs.push(`${key}=${quote(errorSummary(error, raw.message === message))}`);
      stacks.push(...stackLines(error));
    } else {
      pairs.push(`${key}=${typeof value === 'string' ? quote(value) : JSON.stringify(value)}`);
    }
  }
  const line = pairs.length > 0 ? `${message} ${pairs.join(' ')}` : message;
  return stacks.length > 0 ? `${line}\n${stacks.join('\n')}` : line;
}

/** A string bare when it has no space, quote or `=`; quoted and escaped otherwise. */
function quote(text: string): string {
  return text !== '' && /^[^\s"=\\]+$/u.test(text) ? text : JSON.stringify(text);
}

/** An error's stack and its causes' stacks, indented under the line. */
function stackLines(error: SerializedError, depth = 0): string[] {
  const lines: string[] = [];
  if (error.stack) {
    const [first, ...rest] = error.stack.split('\n');
    lines.push(
      `  ${depth > 0 ? 'caused by: ' : ''}${first}`,
      ...rest.map((l) => `    ${l.trim()}`),
    );
  }
  if (typeof error.cause === 'object') lines.push(...stackLines(error.cause, depth + 1));
  return lines;
}
