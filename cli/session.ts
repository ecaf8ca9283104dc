/**
 * What every command that connects does first, in one place: load the config, resolve the
 * database (see connect.ts), reach it within `--connect-timeout`, and name the database,
 * schema and tables it will work on. A session owns its connections: `close()` ends them
 * all, the config's Sequelize too, so the command exits at once.
 */
import { existsSync } from 'node:fs';
import { formatLoadError, type LoadedConfig, loadConfig } from '../src/declare/load-config.js';
import { ConfigurationError } from '../src/errors/outbox-error.js';
import { findDialect } from '../src/storage/dialects.js';
import { type TableNames, tableNames } from '../src/storage/tables.js';
import { type CliDatabase, checkReachable, closeDatabase, resolveDatabase } from './connect.js';
import type { CliIo } from './io.js';
import type { ConnectionFlags } from './options.js';

/** A loaded config on a reachable database. */
export interface Session {
  readonly loaded: LoadedConfig;
  readonly db: CliDatabase;
  readonly tables: TableNames;
  /** PostgreSQL: the schema of the tables (`--schema`, else the connection's current one). */
  readonly schema: string | undefined;
  /** `postgres://app:***@db:5432/shop (from DATABASE_URL), schema public`: what output names. */
  readonly where: string;
  close(): Promise<void>;
}

/** A SQLite database file that is not there (and which the command must not create). */
export class MissingDatabaseFile extends ConfigurationError {}

/**
 * Load the config (`file`, else the first default name found, relative to `cwd`), or
 * throw its load error as the CLI prints it (`config not found at …`, `syntax error at
 * file:line:column`, …).
 */
export async function loadOrFail(file: string | undefined, cwd: string): Promise<LoadedConfig> {
  const result = await loadConfig(file, cwd);
  if (!result.ok) {
    throw new ConfigurationError(formatLoadError(result.error).replace(/^outbox: /, ''), {
      path: 'config',
    });
  }
  return result.value;
}

/**
 * Open a session for a command's flags, reading the config and the database variables
 * from `io` (its `cwd` and `env`). `mustExist`: refuse a SQLite file that is not there
 * rather than create an empty one (every command but `migrate`).
 * @throws {ConfigurationError} for a config that does not load, no database, a conflict
 * with the config's Sequelize, or a database that does not answer.
 */
export async function openSession(
  flags: ConnectionFlags,
  options: { mustExist: boolean },
  io: Pick<CliIo, 'env' | 'cwd'>,
): Promise<Session> {
  const loaded = await loadOrFail(flags.config, io.cwd);
  // Checked before anything opens: a prefix or schema that is not an identifier.
  let tables: TableNames;
  let db: CliDatabase;
  try {
    tables = tableNames(flags.tablePrefix ?? 'outbox_', flags.schema);
    db = resolveDatabase(
      loaded,
      {
        url: flags.url,
        useUrlOverConfig: flags.useUrlOverConfig,
        preparedStatements: flags.preparedStatements,
        connectTimeoutMs: flags.connectTimeout,
      },
      io.env,
      io.cwd,
    );
  } catch (error) {
    await closeConfigSequelize(loaded, undefined);
    throw error;
  }
  const close = async () => {
    await closeDatabase(db);
    await closeConfigSequelize(loaded, db);
  };
  try {
    if (options.mustExist && db.databaseFile && !existsSync(db.databaseFile)) {
      const title = findDialect(db.sequelize.getDialect())?.title;
      throw new MissingDatabaseFile(
        `there is no ${title} database at ${db.databaseFile} (${db.origin}); create the outbox tables first: npx outbox migrate`,
        { path: 'url' },
      );
    }
    // Where the dialect has schemas, its entry says how to ask the connection's current one.
    const schemaSql =
      flags.schema === undefined
        ? findDialect(db.sequelize.getDialect())?.connection.currentSchemaSql
        : undefined;
    const rows = await checkReachable(db, flags.connectTimeout, schemaSql);
    const schema =
      flags.schema ?? (schemaSql ? String(rows[0]?.schema ?? '') || undefined : undefined);
    const prefix =
      flags.tablePrefix && flags.tablePrefix !== 'outbox_' ? `, tables ${flags.tablePrefix}*` : '';
    const where = `${db.origin}${schema ? `, schema ${schema}` : ''}${prefix}`;
    return { loaded, db, tables, schema, where, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Close the Sequelize the config exports when the command did not work through it (a
 * refusal, `--use-url-over-config`): it has opened nothing, but the config module was
 * loaded for this command alone, so nothing else will ever close it — and a command run
 * in-process (`main(argv, io)`) must leave nothing behind.
 */
export async function closeConfigSequelize(
  loaded: Pick<LoadedConfig, 'sequelize'> | undefined,
  db: Pick<CliDatabase, 'sequelize'> | undefined,
): Promise<void> {
  const own = loaded?.sequelize;
  if (own && own !== db?.sequelize) await own.close().catch(() => {});
}
