import { ValidationError } from '../errors/outbox-error.js';

/**
 * The JSON encoding of payloads and headers (the topic-outbox reference's
 * `OutboxJsonEncoding`, in TypeScript's terms):
 *
 * | value                     | JSON                               |
 * |---------------------------|------------------------------------|
 * | `Date`                    | ISO 8601 text                      |
 * | `bigint`                  | its decimal text, `"12345678901"`  |
 * | a decimal (has `toJSON`)  | what it says, e.g. `"12.50"`       |
 * | `Buffer` / `Uint8Array`   | base64 text                        |
 *
 * Anything else that JSON cannot hold (`NaN`, `Infinity`, a `Map`, a `Set`, a function, a
 * symbol) is refused with a `ValidationError` naming its path, at any depth: it must never
 * quietly become text no JSON reader reads, or `null`.
 *
 * @returns the JSON text.
 * @throws {ValidationError} naming the first offending path, e.g. `payload.items[0].price`.
 */
export function encodeJson(value: unknown, root = 'payload'): string {
  let bad = false;
  let text: string | undefined;
  try {
    text = JSON.stringify(value, function replacer(this: Record<string, unknown>, key, v) {
      const raw = this[key];
      if (raw instanceof Uint8Array) return Buffer.from(raw).toString('base64');
      switch (typeof v) {
        case 'number':
          if (!Number.isFinite(v)) bad = true;
          return v;
        case 'bigint':
          return v.toString();
        case 'function':
        case 'symbol':
          bad = true;
          return undefined;
        case 'object':
          if (v instanceof Map || v instanceof Set) bad = true;
          return v;
        default:
          return v;
      }
    });
  } catch (error) {
    throw new ValidationError(`${root} cannot be encoded as JSON: ${(error as Error).message}`, {
      path: root,
      cause: error,
    });
  }
  if (bad || text === undefined) throw explain(value, root);
  if (text.includes('\\u0000') && NUL_ESCAPE.test(text)) {
    throw new ValidationError(
      `${root} contains a NUL character (\\u0000), which PostgreSQL's jsonb cannot store; strip it before firing`,
      { path: root },
    );
  }
  return text;
}

/** A JSON `\u0000` escape (preceded by an even number of backslashes, so not `\\u0000` text). */
const NUL_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u0000/;

/** Walk the value again (the slow path, only after a failure) to name what was refused. */
function explain(value: unknown, root: string): ValidationError {
  const seen = new Set<unknown>();
  const walk = (v: unknown, path: string): ValidationError | undefined => {
    if (typeof v === 'number' && !Number.isFinite(v)) {
      return new ValidationError(
        `${path} is ${v}, which JSON cannot represent; nothing was written`,
        { path },
      );
    }
    if (typeof v === 'function' || typeof v === 'symbol') {
      return new ValidationError(
        `${path} is a ${typeof v}, which JSON cannot represent; nothing was written`,
        { path },
      );
    }
    if (v instanceof Map || v instanceof Set) {
      return new ValidationError(
        `${path} is a ${v instanceof Map ? 'Map' : 'Set'}, which JSON cannot represent; use an object or an array`,
        { path },
      );
    }
    if (v === undefined && path === root) {
      return new ValidationError(`${path} is undefined; pass a JSON value (an object, usually)`, {
        path,
      });
    }
    if (
      typeof v === 'object' &&
      v !== null &&
      !seen.has(v) &&
      !(v instanceof Date) &&
      !(v instanceof Uint8Array)
    ) {
      seen.add(v);
      if (typeof (v as { toJSON?: unknown }).toJSON === 'function') {
        return walk((v as { toJSON(): unknown }).toJSON(), path);
      }
      for (const [k, child] of Object.entries(v)) {
        const found = walk(child, Array.isArray(v) ? `${path}[${k}]` : `${path}.${k}`);
        if (found) return found;
      }
    }
    return undefined;
  };
  return (
    walk(value, root) ?? new ValidationError(`${root} cannot be encoded as JSON`, { path: root })
  );
}

/** Parse a stored JSON column: drivers hand back text (SQLite) or a parsed value (JSONB). */
export function decodeJson(stored: unknown): unknown {
  return typeof stored === 'string' ? JSON.parse(stored) : stored;
}
