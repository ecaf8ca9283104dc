import { ValidationError } from '../errors/outbox-error.js';

/**
 * The JSON encoding of payloads and headers (the topic-outbox reference's
 * `OutboxJsonEncoding`, in TypeScript's terms):
 *
 * | value                       | JSON                               |
 * |-----------------------------|------------------------------------|
 * | `Date` (a valid one)        | ISO 8601 text                      |
 * | `bigint`                    | its decimal text, `"12345678901"`  |
 * | an object with `toJSON()`   | what it says, e.g. `"12.50"`       |
 * | `Buffer` / `Uint8Array`     | base64 text                        |
 * | a plain object, an array    | itself, encoded member by member   |
 * | a property set to undefined | left out, like an absent optional  |
 * | `-0`                        | `0` (JSON has one zero)            |
 *
 * THE CODEC REFUSES, IT NEVER CHANGES A VALUE: anything else is refused with a
 * `ValidationError` naming its path, at any depth, in payloads and headers alike, before
 * anything is written — never stored as something that reads back differently (or never
 * reads back at all). Refused:
 *
 * - `NaN`, `Infinity`, a function, a symbol (JSON has no such value);
 * - `undefined` inside an array (JSON would store `null`, which the schema then refuses
 *   on every delivery);
 * - an instance of a class without `toJSON` — a `Map`, a `Set`, a `Float32Array`, your own
 *   class (JSON would store its fields as a plain object, which decodes as one). Plain
 *   objects are those whose prototype is `Object.prototype` (of any realm) or `null`;
 * - an invalid `Date` (JSON would store `null`);
 * - a string (or an object key) holding an unpaired UTF-16 surrogate — half a character,
 *   e.g. an emoji cut by `.slice()` — or a NUL character: PostgreSQL's `jsonb` cannot store
 *   either, and its refusal would abort the caller's transaction;
 * - a cycle.
 *
 * Symbol-keyed properties are not data and are not encoded. The encodings of the table
 * change a value's type (a Date becomes text): `fire()` checks that the event's schema
 * still accepts such a payload as the relay will decode it (see `EncodedJson` in `src/codec/json.ts`).
 *
 * The fast path is one `JSON.stringify` with a replacer that only raises a flag; the value
 * is walked a second time only to explain a refusal.
 *
 * @param root the name of the value in messages and paths: `payload` or `headers`.
 * @returns the JSON text.
 * @throws {ValidationError} naming the first offending path, e.g. `payload.items[0].price`.
 */
export function encodeJson(value: unknown, root = 'payload'): string {
  return encodeJsonValue(value, root).text;
}

/** What the JSON codec (`encodeJson`, a `PayloadCodec`'s `encode`) produced: the text, and whether it reshaped the value. */
export interface EncodedJson {
  /** The JSON text. */
  readonly text: string;
  /**
   * Whether a reader of the text sees another shape than was passed, by the table's
   * documented encodings: a `Date`, `bigint`, byte array or `toJSON()` object became text
   * (or whatever `toJSON` said), or a property set to undefined was left out. `fire()` then
   * checks the event's schema still accepts the encoded form — what the relay will decode.
   */
  readonly reshaped: boolean;
}

/**
 * {@link encodeJson}, also saying whether the encoding reshaped the value: what the `json`
 * codec's `encode` is, and what a `PayloadCodec` of your own builds its stored text with
 * once it has turned the values JSON cannot hold into its own document, so that document is
 * held to what every database stores (no NUL, no lone surrogate) and a refusal names its
 * path in the payload.
 */
export function encodeJsonValue(value: unknown, root = 'payload'): EncodedJson {
  let reshaped = false;
  let refused = false;
  let text: string | undefined;
  try {
    text = JSON.stringify(value, function replacer(this: unknown, key: string, v: unknown) {
      // `v` is the value after its toJSON(); `raw` the one before.
      const raw = (this as Record<string, unknown>)[key];
      if (typeof raw === 'object' && raw !== null) {
        if (raw instanceof Uint8Array) {
          reshaped = true;
          return Buffer.from(raw).toString('base64');
        }
        if (raw instanceof Date) {
          if (Number.isNaN(raw.getTime())) refused = true;
          reshaped = true;
          return v;
        }
        if (raw !== v) reshaped = true; // what its toJSON() said
      }
      switch (typeof v) {
        case 'number':
          if (!Number.isFinite(v)) refused = true;
          return v;
        case 'bigint':
          reshaped = true;
          return v.toString();
        case 'undefined':
          // A property is left out (an absent optional); an array element would become null.
          if (Array.isArray(this)) refused = true;
          else reshaped = true;
          return v;
        case 'function':
        case 'symbol':
          refused = true;
          return undefined;
        case 'object':
          if (v !== null && !Array.isArray(v) && !isPlainObject(v)) refused = true;
          return v;
        default:
          return v;
      }
    });
  } catch (error) {
    // A cycle, or a toJSON() that threw: name where.
    throw explain(value, root, error);
  }
  // JSON.stringify escapes exactly the lone surrogates (as \udXXX) and NUL (as \u0000).
  if (refused || text === undefined || (text.includes('\\u') && UNSTORABLE_ESCAPE.test(text))) {
    throw explain(value, root);
  }
  return { text, reshaped };
}

/**
 * A JSON `\u0000` or `\udXXX` escape (preceded by an even number of backslashes, so not
 * `\\u0000` text): a NUL or a lone surrogate, which PostgreSQL's jsonb refuses.
 */
const UNSTORABLE_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/;

/** A lone high surrogate, or a lone low one (the regex works on UTF-16 code units). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** An object JSON encodes member by member and decodes as the same: `{}` or `Object.create(null)`. */
function isPlainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/**
 * Walk the value again (the slow path, only after a refusal), following the same rules
 * as the replacer in the same order as JSON.stringify, to name the first thing refused.
 */
function explain(value: unknown, root: string, thrown?: unknown): ValidationError {
  const ancestors: object[] = [];
  const refuse = (path: string, what: string, cause?: unknown) =>
    new ValidationError(`${path} ${what}; nothing was written`, { path, cause });

  const checkText = (text: string, path: string, what: string): ValidationError | undefined => {
    if (text.includes('\u0000')) {
      return refuse(
        path,
        `contains a NUL character (\\u0000)${what}, which PostgreSQL's jsonb cannot store; strip it before firing`,
      );
    }
    const lone = LONE_SURROGATE.exec(text);
    if (lone) {
      const unit = lone[0].charCodeAt(0).toString(16).toUpperCase();
      return refuse(
        path,
        `holds an unpaired UTF-16 surrogate (U+${unit} at index ${lone.index})${what} — half of a character, often an emoji cut by .slice(); PostgreSQL cannot store it. Cut text by code points (Array.from(text)) or drop the half`,
      );
    }
    return undefined;
  };

  const walk = (
    holder: Record<string, unknown>,
    key: string,
    path: string,
    inArray: boolean,
  ): ValidationError | undefined => {
    let v: unknown = holder[key];
    if (v instanceof Uint8Array) return undefined;
    if (v instanceof Date) {
      return Number.isNaN(v.getTime())
        ? refuse(path, 'is an invalid Date, which JSON would store as null')
        : undefined;
    }
    if (
      ((typeof v === 'object' && v !== null) || typeof v === 'bigint') &&
      typeof (v as { toJSON?: unknown }).toJSON === 'function'
    ) {
      try {
        v = (v as { toJSON(key: string): unknown }).toJSON(key);
      } catch (error) {
        return refuse(path, `cannot be encoded: its toJSON() threw (${String(error)})`, error);
      }
    }
    switch (typeof v) {
      case 'number':
        return Number.isFinite(v)
          ? undefined
          : refuse(path, `is ${v}, which JSON cannot represent`);
      case 'function':
      case 'symbol':
        return refuse(path, `is a ${typeof v}, which JSON cannot represent`);
      case 'string':
        return checkText(v, path, '');
      case 'undefined':
        if (inArray) {
          return refuse(
            path,
            'is undefined inside an array, which JSON would store as null; use null, or leave the element out',
          );
        }
        return path === root
          ? new ValidationError(`${path} is undefined; pass a JSON value (an object, usually)`, {
              path,
            })
          : undefined;
      case 'object': {
        if (v === null) return undefined;
        if (ancestors.includes(v)) {
          return refuse(
            path,
            'refers back to an object that contains it (a cycle), which JSON cannot represent',
          );
        }
        if (v instanceof Map || v instanceof Set) {
          return refuse(
            path,
            `is a ${v instanceof Map ? 'Map' : 'Set'}, which JSON cannot represent; use an object or an array`,
          );
        }
        if (!Array.isArray(v) && !isPlainObject(v)) {
          const type = (v as { constructor?: { name?: string } }).constructor?.name || 'a class';
          return refuse(
            path,
            `is an instance of ${type} without toJSON(), which JSON would store as a plain object of its fields (and decode as one); pass a plain object, or give ${type} a toJSON()`,
          );
        }
        ancestors.push(v);
        try {
          const record = v as Record<string, unknown>;
          if (Array.isArray(v)) {
            for (let i = 0; i < v.length; i++) {
              const found = walk(record, String(i), `${path}[${i}]`, true);
              if (found) return found;
            }
          } else {
            for (const k of Object.keys(v)) {
              const childPath = memberPath(path, k);
              const badKey = checkText(k, childPath, ' in its name');
              if (badKey) return badKey;
              const found = walk(record, k, childPath, false);
              if (found) return found;
            }
          }
        } finally {
          ancestors.pop();
        }
        return undefined;
      }
      default:
        return undefined;
    }
  };
  return (
    walk({ '': value }, '', root, false) ??
    new ValidationError(
      `${root} cannot be encoded as JSON${thrown ? `: ${(thrown as Error).message}` : ''}`,
      { path: root, cause: thrown },
    )
  );
}

/** `payload.items`, or `payload["odd key"]` for a name that is not an identifier. */
function memberPath(path: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** Parse a stored JSON column: drivers hand back text (SQLite) or a parsed value (JSONB). */
export function decodeJson(stored: unknown): unknown {
  return typeof stored === 'string' ? JSON.parse(stored) : stored;
}
