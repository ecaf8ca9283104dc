import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryTypes, Sequelize } from 'sequelize';

/**
 * A database of its own for one test file (or one test), and the ways to reach it.
 *
 * An app whose models and outbox are defined at module level, on its own Sequelize, points
 * that Sequelize at {@link TestDatabase.url}: a test-runner setup file sets the variable the
 * app's db module reads (`process.env.DATABASE_URL = db.url`) before the test file imports
 * the app. Code that takes a Sequelize as an argument can use
 * {@link TestDatabase.sequelize} and {@link TestDatabase.outboxOptions} instead.
 *
 * Remove it from a hook that runs when a test fails too — `afterAll(() => db.cleanup())` in
 * the setup file, `onTestFinished(() => db.cleanup())` in a test — or declare it with
 * `await using db = await sqliteTestDatabase()`; a `cleanup()` on the last line of a test
 * body never runs when an assertion above it fails.
 */
export interface TestDatabase {
  /** Which kind of database this is. */
  readonly dialect: 'sqlite' | 'postgres' | 'mariadb' | 'mysql';
  /**
   * A connection URL for this database, for the app's own Sequelize (`new Sequelize(url)`).
   * SQLite: `sqlite:` and the temp file's path. PostgreSQL: the server's URL (see
   * {@link postgresUrl}) with `options=-c search_path=<schema>`, which Sequelize hands to
   * the driver, so every table the app creates unqualified — its models' (`sync()`) and the
   * outbox's (`migrate()` without a `schema`) — lands in the test's schema. MariaDB: the
   * server's URL (see {@link mariadbUrl}) with the test's own database in its path.
   */
  readonly url: string;
  /**
   * A Sequelize of the helper's own on this database. On PostgreSQL its search path is the
   * server's default, not the test's schema: `outboxOptions` names the schema for the outbox.
   */
  readonly sequelize: Sequelize;
  /** Spread into `createOutbox(config, { ...db.outboxOptions })`. */
  readonly outboxOptions: { sequelize: Sequelize; schema?: string };
  /** Open another Sequelize on the same database (a second process's view). */
  connectAgain(): Sequelize;
  /**
   * Close the helper's connections (its `sequelize` and those of `connectAgain()`) and drop
   * the database: the SQLite file's temp folder, the PostgreSQL schema with everything in
   * it. Idempotent. It does not close a Sequelize the app opened on `url`: close that first
   * (on PostgreSQL an open transaction in the schema holds up the drop).
   */
  cleanup(): Promise<void>;
  /** `cleanup()`, for `await using db = await sqliteTestDatabase()`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Where the PostgreSQL suites connect: `OUTBOX_TEST_PG_URL`, else the local test database. */
export const postgresUrl = (): string =>
  process.env.OUTBOX_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Run `cleanup` at most once, however many hooks (and `await using`) ask for it. */
function once(cleanup: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= cleanup();
    return running;
  };
}

/**
 * A fresh SQLite file in a temp folder of its own, for one test file or one test. Nothing
 * is written until something connects: the file appears at the first query.
 */
export async function sqliteTestDatabase(): Promise<TestDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'outboxkit-'));
  const storage = join(dir, 'test.sqlite');
  const open = () => new Sequelize({ dialect: 'sqlite', storage, logging: false });
  const sequelize = open();
  const others: Sequelize[] = [];
  const cleanup = once(async () => {
    await Promise.allSettled([sequelize.close(), ...others.map((s) => s.close())]);
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    dialect: 'sqlite',
    url: `sqlite:${storage}`,
    sequelize,
    outboxOptions: { sequelize },
    connectAgain() {
      const s = open();
      others.push(s);
      return s;
    },
    cleanup,
    [Symbol.asyncDispose]: cleanup,
  };
}

/**
 * `url` with every connection's search path set to `schema` alone: libpq's `options`
 * startup parameter (kept, and added to, when the URL already carries one). Only the
 * schema, not `public` after it, so a table elsewhere never answers for a missing one.
 */
export function withSearchPath(url: string, schema: string): string {
  const parsed = new URL(url);
  const setting = `-c search_path=${schema}`;
  const existing = parsed.searchParams.get('options');
  parsed.searchParams.set('options', existing ? `${existing} ${setting}` : setting);
  return parsed.toString();
}

/**
 * A fresh PostgreSQL schema for one test file, so files run in parallel without sharing
 * rows. The outbox's tables are created in it by `migrate()`; the app's, by a Sequelize
 * opened on `url`.
 */
export async function postgresTestSchema(): Promise<TestDatabase> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const open = () => new Sequelize(postgresUrl(), { logging: false, pool: { max: 12 } });
  const sequelize = open();
  await sequelize.query(`CREATE SCHEMA "${schema}"`);
  const others: Sequelize[] = [];
  const cleanup = once(async () => {
    await Promise.allSettled(others.map((s) => s.close()));
    await sequelize.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await sequelize.close();
  });
  return {
    dialect: 'postgres',
    url: withSearchPath(postgresUrl(), schema),
    sequelize,
    outboxOptions: { sequelize, schema },
    connectAgain() {
      const s = open();
      others.push(s);
      return s;
    },
    cleanup,
    [Symbol.asyncDispose]: cleanup,
  };
}

/** Whether the PostgreSQL test server answers. */
export async function postgresAvailable(): Promise<boolean> {
  const s = new Sequelize(postgresUrl(), { logging: false, pool: { max: 1 } });
  try {
    await s.authenticate();
    return true;
  } catch {
    return false;
  } finally {
    await s.close().catch(() => {});
  }
}

/** Where the MariaDB suites connect: `OUTBOX_TEST_MARIADB_URL`, else the local server. */
export const mariadbUrl = (): string =>
  process.env.OUTBOX_TEST_MARIADB_URL ?? 'mariadb://root@127.0.0.1:3306/test';

/** The MariaDB server's URL spoken through Sequelize's `dialect` (`mariadb` or `mysql`), on `database`. */
function mariadbUrlFor(dialect: 'mariadb' | 'mysql', database: string): string {
  const url = new URL(mariadbUrl());
  url.pathname = `/${database}`;
  return url.toString().replace(/^[a-z]+:/, `${dialect}:`);
}

/**
 * A fresh MariaDB database for one test file (MariaDB has no schemas inside a database, so a
 * database is the unit of isolation), created on the server of {@link mariadbUrl} and dropped
 * by `cleanup()`. `dialect` picks Sequelize's dialect and so the driver: `mariadb` (the
 * `mariadb` package) or `mysql` (`mysql2`; what a MySQL 8 app runs, here against MariaDB,
 * which exercises the code paths written for MySQL's missing RETURNING).
 */
export async function mariadbTestDatabase(
  dialect: 'mariadb' | 'mysql' = 'mariadb',
): Promise<TestDatabase> {
  const database = `t_${randomBytes(6).toString('hex')}`;
  const url = mariadbUrlFor(dialect, database);
  const open = () => new Sequelize(url, { logging: false, pool: { max: 12 } });
  const admin = new Sequelize(mariadbUrlFor(dialect, ''), { logging: false, pool: { max: 1 } });
  await admin
    .query(`CREATE DATABASE \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`, {
      type: QueryTypes.BULKUPDATE,
    })
    .catch(async (error) => {
      await admin.close();
      throw error;
    });
  const sequelize = open();
  const others: Sequelize[] = [];
  const cleanup = once(async () => {
    await Promise.allSettled([sequelize.close(), ...others.map((s) => s.close())]);
    await admin
      .query(`DROP DATABASE IF EXISTS \`${database}\``, { type: QueryTypes.BULKUPDATE })
      .catch(() => {});
    await admin.close();
  });
  return {
    dialect,
    url,
    sequelize,
    outboxOptions: { sequelize },
    connectAgain() {
      const s = open();
      others.push(s);
      return s;
    },
    cleanup,
    [Symbol.asyncDispose]: cleanup,
  };
}

/** {@link mariadbTestDatabase} through Sequelize's `mysql` dialect and the mysql2 driver. */
export function mysqlTestDatabase(): Promise<TestDatabase> {
  return mariadbTestDatabase('mysql');
}

/** Whether the MariaDB test server answers. */
export async function mariadbAvailable(): Promise<boolean> {
  const s = new Sequelize(mariadbUrlFor('mariadb', ''), {
    logging: false,
    pool: { max: 1 },
    dialectOptions: { connectTimeout: 3_000 },
  });
  try {
    await s.authenticate();
    return true;
  } catch {
    return false;
  } finally {
    await s.close().catch(() => {});
  }
}
