/**
 * The options the commands share, declared once: every command that connects takes the
 * same connection flags, and every number is checked at parse time, in CLI words
 * (`option '--batch-size <n>' argument 'abc' is invalid. expected an integer from 1 to
 * 10000`), before the config loads or a connection opens.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { DATABASE_ORDER } from './connect.js';
import { LOG_FORMATS, type LogFormat } from './log-format.js';

/** A parser of an integer option within `[min, max]`. */
export function integer(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\s*-?\d+\s*$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(
        max === Number.MAX_SAFE_INTEGER
          ? `expected an integer ≥ ${min}.`
          : `expected an integer from ${min} to ${max}.`,
      );
    }
    return n;
  };
}

/** The connection and table options, as commander hands them over. */
export interface ConnectionFlags {
  readonly config?: string;
  readonly url?: string;
  readonly useUrlOverConfig?: boolean;
  readonly schema?: string;
  readonly tablePrefix?: string;
  /** `--no-prepared-statements` sets it false. */
  readonly preparedStatements: boolean;
  readonly pollInterval?: number;
  readonly connectTimeout: number;
  readonly logFormat: LogFormat;
}

/** The default of `--connect-timeout`, in milliseconds. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** The `-c, --config` option (every command that reads the config). */
export function configOption(command: Command): Command {
  return command.option(
    '-c, --config <file>',
    'the config module (.ts, .mts, .js, .mjs; default: the first outbox.config.{ts,mts,cts,js,mjs,cjs} found)',
  );
}

/** The options of every command that connects to the database. */
export function connectionOptions(command: Command): Command {
  return configOption(command)
    .option(
      '--url <url>',
      `database URL, postgres://… or sqlite:file (precedence: ${DATABASE_ORDER}; none of them is an error)`,
    )
    .option(
      '--use-url-over-config',
      "use --url (or OUTBOX_DATABASE_URL / DATABASE_URL) although the config exports a sequelize on another database: only when no handler uses the config's models",
    )
    .option('--schema <name>', 'PostgreSQL schema of the outbox tables (default: the search path)')
    .option('--table-prefix <prefix>', 'prefix of the outbox table names (default: outbox_)')
    .option(
      '--no-prepared-statements',
      'PostgreSQL: no named prepared statements (behind PgBouncer in transaction mode before 1.21)',
    )
    .option(
      '--poll-interval <ms>',
      "how long an idle relay waits before it polls again (default: the config's settings.pollIntervalMs)",
      integer(1),
    )
    .option(
      '--connect-timeout <ms>',
      'how long to wait for the database to answer before giving up (exit 1)',
      integer(1),
      DEFAULT_CONNECT_TIMEOUT_MS,
    )
    .addOption(
      new Option('--log-format <format>', 'log lines as JSON (one object a line) or for people')
        .choices(LOG_FORMATS)
        .default('pretty'),
    );
}
