import { plainFields } from './format.js';
import type { OutboxLogger } from './logger.js';
import { type LoggerOptions, writeLogger } from './write-logger.js';

/** The keys every JSON line has; a field of the same name is written as `field.<key>`. */
const RESERVED = new Set(['time', 'level', 'msg']);

/**
 * A logger for log collectors (the CLI's `--log-format json`): one JSON object per line,
 * `{"time":"…","level":"warn","msg":"claim failed; retrying in 20 ms","error":{"name":…}}`.
 * The level is a word, not pino's number, so a line reads the same to a person and to a
 * collector; fields sit beside `msg` (as pino and bunyan put them), errors as
 * `{ name, message, code?, cause?, stack? }`, the stack only at level `debug` (or with
 * `stacks: true`).
 */
export function jsonLogger(options: LoggerOptions = {}): OutboxLogger {
  return writeLogger(options, (entry, { stacks }) => {
    const line: Record<string, unknown> = {
      time: entry.time.toISOString(),
      level: entry.level,
      msg: entry.message,
    };
    for (const [key, value] of Object.entries(plainFields(entry.fields, { stacks }))) {
      line[RESERVED.has(key) ? `field.${key}` : key] = value;
    }
    return JSON.stringify(line);
  });
}
