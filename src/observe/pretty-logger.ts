import { type FormatOptions, textEntry } from './format.js';
import type { LogLevel } from './levels.js';
import type { OutboxLogger } from './logger.js';
import { type LoggerOptions, writeLogger } from './write-logger.js';

/** Options of {@link prettyLogger}. */
export interface PrettyLoggerOptions extends LoggerOptions {
  /**
   * Colour the level. @defaultValue when the stream is a terminal and `NO_COLOR` is unset
   */
  readonly colors?: boolean;
  /**
   * Begin each line with its time. Turn off where the process manager stamps lines
   * itself (journald, `docker logs -t`). @defaultValue true
   */
  readonly timestamps?: boolean;
  /**
   * A tag after the level, `[name]`, to tell these lines from others on the same stream
   * (a CLI's own). @defaultValue none
   */
  readonly name?: string;
}

const LABEL: Readonly<Record<LogLevel, string>> = {
  debug: 'DEBUG',
  info: 'INFO ',
  warn: 'WARN ',
  error: 'ERROR',
};

const COLOR: Readonly<Record<LogLevel, string>> = {
  debug: '\u001b[90m',
  info: '\u001b[36m',
  warn: '\u001b[33m',
  error: '\u001b[31m',
};

/**
 * A logger for people reading a terminal (the CLI's `--log-format pretty`): one line per
 * entry, `2026-12-01T10:40:00.123Z WARN  claim failed; retrying in 20 ms error="…"`, with
 * fields as `key=value` and errors as `Name: message [code] (cause: …)`. Stacks only at
 * level `debug` (or with `stacks: true`), indented under their line.
 */
export function prettyLogger(options: PrettyLoggerOptions = {}): OutboxLogger {
  return writeLogger(options, (entry, { stacks, stream }) => {
    const colors = options.colors ?? (stream.isTTY === true && process.env.NO_COLOR === undefined);
    const label = colors
      ? `${COLOR[entry.level]}${LABEL[entry.level]}\u001b[39m`
      : LABEL[entry.level];
    const format: FormatOptions = { stacks };
    const parts = [
      ...(options.timestamps === false ? [] : [entry.time.toISOString()]),
      label,
      ...(options.name === undefined ? [] : [`[${options.name}]`]),
      textEntry(entry.message, entry.fields, format),
    ];
    return parts.join(' ');
  });
}
