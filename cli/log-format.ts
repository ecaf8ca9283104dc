/**
 * `--log-format json|pretty`: what the CLI writes, and the logger it hands the outbox
 * (src/observe's `jsonLogger()` / `prettyLogger()`, level info, to stderr).
 *
 * - `pretty` (the default): the command's own lines for a person, `outbox: …`; the
 *   outbox's as prettyLogger writes them (`… WARN  [outboxkit] claim failed …`).
 * - `json`: every line, the command's own too, one JSON object (`{"time","level","msg",
 *   …fields}`) for a log collector.
 */
import { jsonLogger, prettyLogger } from '../src/observe/index.js';
import type { OutboxLogger } from '../src/observe/logger.js';
import { type CliIo, type CliStream, colorsOn } from './io.js';

export const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Where a command writes: its result (stdout), its progress and errors (stderr). */
export interface CliOutput {
  readonly format: LogFormat;
  /** The logger the command's outbox logs through. */
  readonly logger: OutboxLogger;
  /** The command's result, on stdout. */
  result(message: string, fields?: Record<string, unknown>): void;
  /** Progress (the relay's start and stop), on stderr. */
  info(message: string, fields?: Record<string, unknown>): void;
  /** A warning of the command's own, on stderr. */
  warn(message: string, fields?: Record<string, unknown>): void;
  /** Why the command failed, on stderr. */
  error(message: string, fields?: Record<string, unknown>): void;
}

/** The outbox's logger for a format: info and above, to `io.stderr`. */
export function outboxLogger(format: LogFormat, io: Pick<CliIo, 'stderr' | 'env'>): OutboxLogger {
  return format === 'json'
    ? jsonLogger({ stream: io.stderr })
    : prettyLogger({
        name: 'outboxkit',
        stream: io.stderr,
        colors: colorsOn(io.stderr, io.env),
      });
}

/** The command's output for a format, on `io`'s streams. */
export function cliOutput(
  given: LogFormat | undefined,
  io: Pick<CliIo, 'stdout' | 'stderr' | 'env'>,
): CliOutput {
  const format = given ?? 'pretty';
  if (format === 'json') {
    const out = jsonLogger({ stream: io.stdout });
    const err = jsonLogger({ stream: io.stderr });
    return {
      format,
      logger: outboxLogger(format, io),
      result: (m, f) => out.info(m, f),
      info: (m, f) => err.info(m, f),
      warn: (m, f) => err.warn(m, f),
      error: (m, f) => err.error(m, f),
    };
  }
  const line =
    (stream: CliStream) =>
    (message: string): void => {
      stream.write(`outbox: ${message}\n`);
    };
  return {
    format,
    logger: outboxLogger(format, io),
    result: line(io.stdout),
    info: line(io.stderr),
    warn: line(io.stderr),
    error: line(io.stderr),
  };
}
