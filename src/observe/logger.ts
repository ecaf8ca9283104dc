import { textEntry } from './format.js';

/**
 * Where outboxkit writes what it has to say: `message` for a person, `fields` for a
 * machine (ids, counts, the error as an `Error`). Plug in your own, winston as it is, or
 * pino and bunyan — whose methods take `(fields, message)` — as they are: `createOutbox`
 * recognises a pino logger, and {@link pinoLogger} adapts any other `(fields, message)`
 * logger.
 */
export interface OutboxLogger {
  /** Log `message` at debug level, with its structured `fields`. */
  debug(message: string, fields?: Record<string, unknown>): void;
  /** Log `message` at info level, with its structured `fields`. */
  info(message: string, fields?: Record<string, unknown>): void;
  /** Log `message` at warn level, with its structured `fields`. */
  warn(message: string, fields?: Record<string, unknown>): void;
  /** Log `message` at error level, with its structured `fields`. */
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * The default logger: info, warnings and errors to the console, one line each
 * (`[outboxkit] claim failed; retrying in 20 ms error="…"`), errors as `Name: message`
 * with no stack; debug dropped. Info is kept because the relay says there when a database
 * it reported unreachable is back.
 */
export const consoleLogger: OutboxLogger = {
  debug() {},
  info(message, fields) {
    console.info(`[outboxkit] ${textEntry(message, fields, { stacks: false })}`);
  },
  warn(message, fields) {
    console.warn(`[outboxkit] ${textEntry(message, fields, { stacks: false })}`);
  },
  error(message, fields) {
    console.error(`[outboxkit] ${textEntry(message, fields, { stacks: false })}`);
  },
};

/** A logger that drops everything, for tests and benchmarks. */
export const silentLogger: OutboxLogger = { debug() {}, info() {}, warn() {}, error() {} };
