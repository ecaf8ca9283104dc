import { ValidationError } from '../errors/outbox-error.js';

/**
 * A header's value as a broker client hands it over: text, bytes (kafkajs gives a
 * `Buffer`), a number (an AMQP table may carry one), or a list of those (kafkajs and Node's
 * HTTP headers for a repeated header).
 */
export type HeaderValue =
  | string
  | number
  | Uint8Array
  | readonly (string | number | Uint8Array)[]
  | null
  | undefined;

const text = (v: string | number | Uint8Array): string =>
  typeof v === 'string' ? v : typeof v === 'number' ? String(v) : Buffer.from(v).toString('utf8');

/**
 * The header `name` of `headers` as text, found whatever its case (HTTP headers are
 * case-insensitive, and a proxy may have changed it), or `undefined` when it is absent.
 * A repeated header counts once when its copies agree.
 * @throws {ValidationError} when it is repeated with different values: which one names
 *   the event cannot be told, and guessing would deduplicate the wrong message.
 */
export function headerText(
  where: string,
  headers: Readonly<Record<string, unknown>> | null | undefined,
  name: string,
): string | undefined {
  if (!headers || typeof headers !== 'object') return undefined;
  let raw: unknown = headers[name];
  if (raw === undefined) {
    const lower = name.toLowerCase();
    for (const [key, value] of Object.entries(headers)) {
      if (key.toLowerCase() === lower) {
        raw = value;
        break;
      }
    }
  }
  if (raw === undefined || raw === null) return undefined;
  const values = (Array.isArray(raw) ? raw : [raw]).filter((v) => v !== undefined && v !== null);
  const texts = values.map((v) => {
    if (typeof v === 'string' || typeof v === 'number' || v instanceof Uint8Array) return text(v);
    throw new ValidationError(
      `${where}: the ${name} header is neither text nor bytes (got ${typeof v})`,
      { path: `headers.${name}` },
    );
  });
  const distinct = [...new Set(texts)];
  if (distinct.length > 1) {
    throw new ValidationError(
      `${where}: the ${name} header is repeated with different values (${distinct.map((v) => JSON.stringify(v)).join(', ')}); which one names the event cannot be told`,
      { path: `headers.${name}` },
    );
  }
  return distinct[0];
}
