import { LOG_LEVEL_RANK, type LogLevel } from './levels.js';
import type { OutboxLogger } from './logger.js';

/** Where a logger of outboxkit's own writes its lines: `process.stderr`, a file stream, a test's array. */
export interface LogStream {
  /** Write one line (ending in a newline), as `process.stderr.write` does. */
  write(chunk: string): unknown;
  readonly isTTY?: boolean;
}

/** Options of {@link prettyLogger} and {@link jsonLogger}. */
export interface LoggerOptions {
  /**
   * The least severe level written.
   * @defaultValue `'info'`
   */
  readonly level?: LogLevel;
  /**
   * Whether errors carry their stacks. Off by default because an outage repeats the same
   * stack through pool and driver frames on every line; turn the level to `debug` when a
   * stack is what you need.
   * @defaultValue `true` when `level` is `'debug'`, else `false`
   */
  readonly stacks?: boolean;
  /**
   * Where lines go. Standard error by default, so a command's own output on standard
   * output (`migrate --print-sql`, a report) never has log lines mixed into it.
   * @defaultValue `process.stderr`
   */
  readonly stream?: LogStream;
  /** The clock entries are stamped with (tests fix it). @defaultValue `() => new Date()` */
  readonly clock?: () => Date;
}

/** One entry, as a writer renders it. */
export interface LogEntry {
  readonly level: LogLevel;
  readonly time: Date;
  readonly message: string;
  readonly fields: Record<string, unknown> | undefined;
}

/** A logger that filters by level and writes each entry as `render` puts it, one line (or block) each. */
export function writeLogger(
  options: LoggerOptions,
  render: (entry: LogEntry, context: { stacks: boolean; stream: LogStream }) => string,
): OutboxLogger {
  const threshold = LOG_LEVEL_RANK[options.level ?? 'info'];
  const stacks = options.stacks ?? options.level === 'debug';
  const stream = options.stream ?? process.stderr;
  const clock = options.clock ?? (() => new Date());
  const at =
    (level: LogLevel) =>
    (message: string, fields?: Record<string, unknown>): void => {
      if (LOG_LEVEL_RANK[level] < threshold) return;
      const entry: LogEntry = { level, time: clock(), message, fields };
      let line: string;
      try {
        line = render(entry, { stacks, stream });
      } catch (error) {
        // A logger must never throw into the relay: write what can be written.
        line = `${level} ${message} (fields could not be written: ${String(error)})`;
      }
      stream.write(`${line}\n`);
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
