import type { OutboxLogger } from './logger.js';
import { isErrorLike, serializeError } from './serialize-error.js';

/** A log method in pino's (and bunyan's) shape: `(fields, message)`, or `(message)` alone. */
export interface PinoLogFn {
  (fields: object, message?: string): void;
  (message: string): void;
}

/** A logger whose methods take `(fields, message)`: pino, bunyan, or a child of either. */
export interface PinoLikeLogger {
  debug: PinoLogFn;
  info: PinoLogFn;
  warn: PinoLogFn;
  error: PinoLogFn;
}

/**
 * pino's public marker (`pino.symbols.serializersSym`), on every pino logger and its
 * children since pino 5; registered with `Symbol.for` so any pino version sets the same one.
 */
const PINO_SERIALIZERS = Symbol.for('pino.serializers');

/**
 * Whether `logger` is a pino logger. Read from pino's marker, never from the methods'
 * shape: a winston logger has `child`, `level` and `levels` too, and takes
 * `(message, fields)` like {@link OutboxLogger}, so shape alone would get one of them wrong.
 */
export function isPinoLogger(logger: unknown): logger is PinoLikeLogger {
  return typeof logger === 'object' && logger !== null && PINO_SERIALIZERS in logger;
}

/**
 * Adapt a `(fields, message)` logger — pino, bunyan — to {@link OutboxLogger}.
 * `createOutbox({ logger: pino })` does this by itself for a pino logger; call it for
 * bunyan, a wrapper around pino, or to be explicit.
 *
 * An entry without fields is logged as `logger.warn(message)`; with fields, as
 * `logger.warn(fields, message)`. An `Error` under `error` is passed as `err`, raw, so
 * pino's `err` serializer (and pino-pretty) treat it as they treat yours; an `Error` under
 * any other key is serialized to `{ name, message, code, cause, stack }`, since pino would
 * write it as `{}`. Levels are the logger's business: every entry is handed over.
 */
export function pinoLogger(logger: PinoLikeLogger): OutboxLogger {
  const at =
    (level: keyof PinoLikeLogger) =>
    (message: string, fields?: Record<string, unknown>): void => {
      // A method call, not a detached function: pino's methods read `this`.
      if (!fields || Object.keys(fields).length === 0) logger[level](message);
      else logger[level](pinoFields(fields), message);
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

function pinoFields(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (!isErrorLike(value)) out[key] = value;
    else if (key === 'error' && !('err' in fields)) out.err = value;
    else out[key] = serializeError(value, { stacks: true });
  }
  return out;
}

/**
 * The logger `createOutbox` uses for its `logger` option: a pino logger adapted, anything
 * else as it is. Exported for the wakeups and the CLI, which take a `logger` of their own.
 */
export function toOutboxLogger(logger: OutboxLogger | PinoLikeLogger): OutboxLogger {
  return isPinoLogger(logger) ? pinoLogger(logger) : (logger as OutboxLogger);
}
