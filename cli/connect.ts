/**
 * Which database a command works on, in ONE documented order:
 *
 * 1. `--url <url>`
 * 2. the `OUTBOX_DATABASE_URL` environment variable
 * 3. the `DATABASE_URL` environment variable
 * 4. the `sequelize` the config module exports
 *
 * and nothing else: with none of them the command refuses (it never invents a database).
 * When the config exports a Sequelize AND a URL names a database, the models (and so the
 * handlers' transactions) are bound to the config's Sequelize: the URL is used through
 * that Sequelize when it names the same database, and refused when it names another,
 * unless `--use-url-over-config` says the handlers do not need the config's models.
 */
import { relative, resolve } from 'node:path';
import { type Dialect, QueryTypes, Sequelize } from 'sequelize';
import type { LoadedConfig } from '../src/declare/load-config.js';
import { ConfigurationError } from '../src/errors/outbox-error.js';
import { instanceOptions } from '../src/sequelize/internals.js';
import {
  dialectOfUrl,
  fileDatabaseUrl,
  findDialect,
  listUrlPrefixes,
} from '../src/storage/dialects.js';
import type { CliEnv } from './io.js';

/** Where the database came from: the rule of the order above that chose it. */
export type DatabaseSource = '--url' | 'OUTBOX_DATABASE_URL' | 'DATABASE_URL' | 'config';

/** The options every command that connects takes (see `connectionOptions`). */
export interface ConnectOptions {
  readonly url?: string;
  /** Use the URL even though the config exports a Sequelize on another database. */
  readonly useUrlOverConfig?: boolean;
  /** PostgreSQL: named prepared statements on the hot path. @defaultValue true */
  readonly preparedStatements?: boolean;
  /** How long to wait for the database to answer, in milliseconds. */
  readonly connectTimeoutMs: number;
}

/** A database a command resolved: its Sequelize, where it came from, and how to close it. */
export interface CliDatabase {
  readonly sequelize: Sequelize;
  readonly source: DatabaseSource;
  /** The database as people see it, credentials masked: `postgres://app:***@db:5432/shop`. */
  readonly label: string;
  /** `postgres://…/shop (from DATABASE_URL, through the sequelize outbox.config.ts exports)`. */
  readonly origin: string;
  /** Whether the CLI opened this Sequelize (else it is the config's). */
  readonly owned: boolean;
  /** A file database (SQLite): its file (absolute), unless it is in memory. */
  readonly databaseFile: string | undefined;
}

/** The environment variables the order reads, by name. */
export const DATABASE_URL_VARIABLES = ['OUTBOX_DATABASE_URL', 'DATABASE_URL'] as const;

/** The order, as the help text and the refusal print it. */
export const DATABASE_ORDER =
  '--url, then OUTBOX_DATABASE_URL, then DATABASE_URL, then the `sequelize` the config exports';

/**
 * Resolve the command's database (see the module comment). Opens nothing yet but the
 * Sequelize object; {@link checkReachable} talks to the server. `env` is where the URL
 * variables are read and `cwd` where a `sqlite:` path resolves: the command's io, never
 * the process's behind its back.
 * @throws {ConfigurationError} when no database is given, or a URL conflicts with the
 * config's own Sequelize.
 */
export function resolveDatabase(
  loaded: Pick<LoadedConfig, 'file' | 'sequelize'>,
  options: ConnectOptions,
  env: CliEnv,
  cwd: string,
): CliDatabase {
  const fromUrl = pickUrl(options.url, env);
  const configSequelize = loaded.sequelize;
  const shown = relative(cwd, loaded.file);
  const file = shown && !shown.startsWith('..') ? shown : loaded.file;
  const exported = `the sequelize ${file} exports`;
  if (!fromUrl) {
    if (!configSequelize) {
      throw new ConfigurationError(
        [
          'no database given. Pass one, in this order of precedence:',
          '  --url <url>                 postgres://user:password@host:5432/db or sqlite:path/to/file.sqlite',
          '  OUTBOX_DATABASE_URL=<url>   the outbox database, for every command',
          '  DATABASE_URL=<url>          the app database',
          `  export const sequelize = new Sequelize(...) in ${file}   (the models' own instance: recommended)`,
        ].join('\n'),
        { path: 'url' },
      );
    }
    const label = describeSequelize(configSequelize, cwd);
    return {
      sequelize: configSequelize,
      source: 'config',
      label,
      origin: `${label} (${exported})`,
      owned: false,
      databaseFile: databaseFileOf(configSequelize, cwd),
    };
  }
  const { url, source } = fromUrl;
  const label = maskUrl(url);
  if (configSequelize) {
    const configLabel = describeSequelize(configSequelize, cwd);
    if (sameDatabase(url, configSequelize, cwd)) {
      return {
        sequelize: configSequelize,
        source,
        label,
        origin: `${label} (from ${source}, through ${exported})`,
        owned: false,
        databaseFile: databaseFileOf(configSequelize, cwd),
      };
    }
    if (!options.useUrlOverConfig) {
      throw new ConfigurationError(
        [
          `${source} names ${label}, but ${file} exports a sequelize on ${configLabel}.`,
          "The config's models are bound to its Sequelize: a relay on another one would run their handlers outside the delivery's transaction, or fail (`conn.serialize is not a function`).",
          `Drop ${source === '--url' ? '--url' : `the ${source} variable`} to use the config's database, or pass --use-url-over-config when no handler uses the config's models.`,
        ].join('\n'),
        { path: 'url' },
      );
    }
  }
  const sequelize = openUrl(url, options, cwd);
  return {
    sequelize,
    databaseFile: databaseFileOf(sequelize, cwd),
    source,
    label,
    origin: `${label} (from ${source}${configSequelize ? ', over the config’s sequelize: --use-url-over-config' : ''})`,
    owned: true,
  };
}

/** The first URL of the order, and which rule gave it. Empty values count as unset. */
function pickUrl(
  url: string | undefined,
  env: CliEnv,
): { url: string; source: Exclude<DatabaseSource, 'config'> } | undefined {
  if (url) return { url, source: '--url' };
  for (const name of DATABASE_URL_VARIABLES) {
    const value = env[name];
    if (value) return { url: value, source: name };
  }
  return undefined;
}

/**
 * A file database's URL (`sqlite:path`, `sqlite://path`, `sqlite::memory:`) → the storage
 * Sequelize takes, resolved in `cwd`; undefined for a server's URL.
 */
function fileStorage(url: string, cwd: string): string | undefined {
  const f = fileDatabaseUrl(url);
  if (!f) return undefined;
  return f.path === ':memory:' ? f.path : resolve(cwd, f.path);
}

/** A Sequelize of the CLI's own for a URL, of the dialect the registry finds by its start. */
function openUrl(url: string, options: ConnectOptions, cwd: string): Sequelize {
  const f = fileDatabaseUrl(url);
  if (f) {
    return new Sequelize({
      dialect: f.entry.name as Dialect,
      storage: fileStorage(url, cwd),
      logging: false,
    });
  }
  const entry = dialectOfUrl(url);
  if (!entry) {
    throw new ConfigurationError(
      `the database URL must start with ${listUrlPrefixes()} (got ${maskUrl(url)})`,
      { path: 'url' },
    );
  }
  return new Sequelize(url, {
    logging: false,
    // The driver's own bound on opening a connection, beside the CLI's (checkReachable).
    dialectOptions: entry.connection.dialectOptions(options.connectTimeoutMs),
  });
}

/** Whether a URL names the database a Sequelize is configured for. */
function sameDatabase(url: string, sequelize: Sequelize, cwd: string): boolean {
  const entry = findDialect(sequelize.getDialect());
  if (!entry || dialectOfUrl(url) !== entry) return false;
  if (entry.connection.file) return fileStorage(url, cwd) === storageOf(sequelize, cwd);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  const c = sequelize.config;
  return (
    parsed.hostname === (c.host ?? 'localhost') &&
    Number(parsed.port || entry.connection.defaultPort) ===
      Number(c.port || entry.connection.defaultPort) &&
    decodeURIComponent(parsed.pathname.replace(/^\//, '')) === c.database
  );
}

/** A file database's storage, resolved in `cwd` (`:memory:` as is). */
function storageOf(sequelize: Sequelize, cwd: string): string {
  const storage = instanceOptions(sequelize).storage ?? ':memory:';
  return storage === ':memory:' || storage === '' ? ':memory:' : resolve(cwd, storage);
}

/** A file database's file (absolute); undefined in memory or for a server's database. */
function databaseFileOf(sequelize: Sequelize, cwd: string): string | undefined {
  if (!findDialect(sequelize.getDialect())?.connection.file) return undefined;
  const storage = storageOf(sequelize, cwd);
  return storage === ':memory:' ? undefined : storage;
}

/** A Sequelize's database as a URL without its password; a file database's path resolves in `cwd`. */
export function describeSequelize(sequelize: Sequelize, cwd: string): string {
  const dialect = sequelize.getDialect();
  const entry = findDialect(dialect);
  if (entry?.connection.file) {
    return `${entry.connection.urlPrefixes[0]}${storageOf(sequelize, cwd)}`;
  }
  const c = sequelize.config;
  const user = c.username ? `${encodeURIComponent(c.username)}@` : '';
  const scheme = entry?.connection.urlPrefixes[0] ?? `${dialect}://`;
  return `${scheme}${user}${c.host ?? 'localhost'}${c.port ? `:${c.port}` : ''}/${c.database}`;
}

/** A URL with its password replaced by `***`. */
export function maskUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*):[^@/]*@/i, '$1:***@');
}

/**
 * Talk to the database once, within `timeoutMs`, and return the rows of `sql`: an
 * unreachable server or a missing database is a refusal the command prints (exit 1),
 * never a wait without end.
 * @throws {ConfigurationError} with the driver's reason.
 */
export async function checkReachable(
  db: CliDatabase,
  timeoutMs: number,
  sql = 'SELECT 1 AS ok',
): Promise<Record<string, unknown>[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${timeoutMs} ms (--connect-timeout)`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([
      db.sequelize.query<Record<string, unknown>>(sql, { type: QueryTypes.SELECT }),
      timeout,
    ]);
  } catch (error) {
    const e = error as { message?: string; parent?: { message?: string } };
    throw new ConfigurationError(
      `could not reach the database ${db.origin}: ${e.parent?.message || e.message || String(error)}`,
      { path: 'url', cause: error },
    );
  } finally {
    clearTimeout(timer);
  }
}

/** Close the database's connections, the config's Sequelize too: the CLI owns the process. */
export async function closeDatabase(db: CliDatabase): Promise<void> {
  await db.sequelize.close().catch(() => {});
}
