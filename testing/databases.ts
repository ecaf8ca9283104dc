import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sequelize } from 'sequelize';

/** A database for one test file: the Sequelize to use, what to pass to createOutbox, and cleanup. */
export interface TestDatabase {
  readonly dialect: 'sqlite' | 'postgres';
  readonly sequelize: Sequelize;
  /** Spread into `createOutbox(config, { ...db.outboxOptions })`. */
  readonly outboxOptions: { sequelize: Sequelize; schema?: string };
  /** Open another Sequelize on the same database (a second process's view). */
  connectAgain(): Sequelize;
  /** Close connections and drop the database (SQLite file, PostgreSQL schema). */
  cleanup(): Promise<void>;
}

/** Where the PostgreSQL suites connect: `OUTBOX_TEST_PG_URL`, else the local test database. */
export const postgresUrl = (): string =>
  process.env.OUTBOX_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A fresh SQLite file in a temp folder, for one test or one file. */
export async function sqliteTestDatabase(): Promise<TestDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'outboxkit-'));
  const storage = join(dir, 'test.sqlite');
  const open = () => new Sequelize({ dialect: 'sqlite', storage, logging: false });
  const sequelize = open();
  const others: Sequelize[] = [];
  return {
    dialect: 'sqlite',
    sequelize,
    outboxOptions: { sequelize },
    connectAgain() {
      const s = open();
      others.push(s);
      return s;
    },
    async cleanup() {
      await Promise.allSettled([sequelize.close(), ...others.map((s) => s.close())]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A fresh PostgreSQL schema for one test file, so files run in parallel without sharing
 * rows. The outbox's tables are created in it by `migrate()`.
 */
export async function postgresTestSchema(): Promise<TestDatabase> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const open = () => new Sequelize(postgresUrl(), { logging: false, pool: { max: 12 } });
  const sequelize = open();
  await sequelize.query(`CREATE SCHEMA "${schema}"`);
  const others: Sequelize[] = [];
  return {
    dialect: 'postgres',
    sequelize,
    outboxOptions: { sequelize, schema },
    connectAgain() {
      const s = open();
      others.push(s);
      return s;
    },
    async cleanup() {
      await Promise.allSettled(others.map((s) => s.close()));
      await sequelize.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
      await sequelize.close();
    },
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
