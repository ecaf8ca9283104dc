import { afterAll, beforeAll, expect, it } from 'vitest';
import { inbox, inboxMigrationSql } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { tableName } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const ID = '01890a5d-ac96-774b-bcce-b302099a8057';

describeEachDialect('inbox.migrate', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(async () => {
    await db?.cleanup();
  });

  async function tablesLike(prefix: string): Promise<string[]> {
    const sql =
      db.dialect === 'mariadb' || db.dialect === 'mysql'
        ? `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE '${prefix}%' ORDER BY 1`
        : db.dialect === 'postgres'
          ? `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = '${db.outboxOptions.schema}' AND table_name LIKE '${prefix}%' ORDER BY 1`
          : `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '${prefix}%' ORDER BY 1`;
    const [rows] = (await db.sequelize.query(sql)) as [{ name: string }[], unknown];
    return rows.map((r) => r.name);
  }

  async function versions(prefix: string): Promise<number[]> {
    const [rows] = (await db.sequelize.query(
      `SELECT version FROM ${tableName(db, `${prefix}inbox_migrations`)} ORDER BY version`,
    )) as [{ version: number }[], unknown];
    return rows.map((r) => Number(r.version));
  }

  it('creates <prefix>inbox and its versions table, idempotently, and two migrators at once apply it once', async () => {
    const options = { schema: db.outboxOptions.schema, tablePrefix: 'mig1_' };
    const a = inbox(db.sequelize, options);
    const b = inbox(db.connectAgain(), options);
    await Promise.all([a.migrate(), b.migrate(), a.migrate()]);
    await a.migrate();
    expect(await tablesLike('mig1_')).toEqual(['mig1_inbox', 'mig1_inbox_migrations']);
    expect(await versions('mig1_')).toEqual([1]);
    expect((await a.handle({ id: ID }, () => 'ok')).status).toBe('processed');
  });

  it("the primary key is (consumer, event_id): a second row of one consumer's id is refused by the database itself", async () => {
    const box = inbox(db.sequelize, { schema: db.outboxOptions.schema, tablePrefix: 'mig2_' });
    await box.migrate();
    const table = tableName(db, 'mig2_inbox');
    const insert = (consumer: string) =>
      db.sequelize.query(
        `INSERT INTO ${table} (consumer, event_id, received_at) VALUES ($1, $2, $3)`,
        { bind: [consumer, ID, db.dialect === 'postgres' ? new Date() : Date.now()] },
      );
    await insert('a');
    await insert('b');
    await expect(insert('a')).rejects.toMatchObject({ name: 'SequelizeUniqueConstraintError' });
  });

  it('migrationSql() is the script migrate() runs: applied by hand, migrate() then finds nothing to do', async () => {
    const options = { schema: db.outboxOptions.schema, tablePrefix: 'mig3_' };
    const box = inbox(db.sequelize, options);
    const script = box.migrationSql();
    expect(script).toBe(inboxMigrationSql(db.dialect, options));
    expect(script).toContain('-- inbox version 1');
    // Applied the way a migration tool would: statement by statement, in one transaction.
    const statements = script
      .split(/;\n/)
      .map((s) => s.replace(/^--.*$/gm, '').trim())
      .filter(Boolean);
    await db.sequelize.transaction(async (transaction) => {
      for (const statement of statements) await db.sequelize.query(statement, { transaction });
    });
    expect(await versions('mig3_')).toEqual([1]);
    await box.migrate();
    expect(await versions('mig3_')).toEqual([1]);
    expect((await box.handle({ id: ID }, () => 1)).status).toBe('processed');
    expect((await box.handle({ id: ID }, () => 1)).status).toBe('duplicate');
  });
});

it('the script of each dialect, pinned', () => {
  expect(inboxMigrationSql('postgres', { schema: 'app' })).toMatchInlineSnapshot(`
    "-- outboxkit inbox migrations for postgres, table "app"."outbox_inbox": what inbox(sequelize).migrate() runs.
    -- Every statement is idempotent; run them in one transaction.

    CREATE SCHEMA IF NOT EXISTS "app";

    CREATE TABLE IF NOT EXISTS "app"."outbox_inbox_migrations" (
      version integer NOT NULL,
      applied_at timestamptz NOT NULL,
      PRIMARY KEY (version)
    );

    -- inbox version 1
    CREATE TABLE IF NOT EXISTS "app"."outbox_inbox" (
      consumer varchar(255) NOT NULL,
      event_id varchar(255) NOT NULL,
      topic varchar(255),
      received_at timestamptz NOT NULL,
      processed_at timestamptz,
      PRIMARY KEY (consumer, event_id)
    );

    CREATE INDEX IF NOT EXISTS "outbox_inbox_received" ON "app"."outbox_inbox" (consumer, received_at);

    INSERT INTO "app"."outbox_inbox_migrations" (version, applied_at) VALUES (1, now()) ON CONFLICT (version) DO NOTHING;
    "
  `);
  expect(inboxMigrationSql('sqlite')).toMatchInlineSnapshot(`
    "-- outboxkit inbox migrations for sqlite, table "outbox_inbox": what inbox(sequelize).migrate() runs.
    -- Every statement is idempotent; run them in one transaction.

    CREATE TABLE IF NOT EXISTS "outbox_inbox_migrations" (
      version INTEGER NOT NULL,
      applied_at INTEGER NOT NULL,
      PRIMARY KEY (version)
    );

    -- inbox version 1
    CREATE TABLE IF NOT EXISTS "outbox_inbox" (
      consumer TEXT NOT NULL,
      event_id TEXT NOT NULL,
      topic TEXT,
      received_at INTEGER NOT NULL,
      processed_at INTEGER,
      PRIMARY KEY (consumer, event_id)
    );

    CREATE INDEX IF NOT EXISTS "outbox_inbox_received" ON "outbox_inbox" (consumer, received_at);

    INSERT INTO "outbox_inbox_migrations" (version, applied_at) VALUES (1, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)) ON CONFLICT (version) DO NOTHING;
    "
  `);
});

it('refuses options it cannot work with, naming the option', async () => {
  const { sqliteTestDatabase } = await import('../../testing/databases.js');
  await using db = await sqliteTestDatabase();
  expect(() => inbox(db.sequelize, { schema: 'app' })).toThrowErrorMatchingInlineSnapshot(
    `[ConfigurationError: inbox(sequelize, { schema }) is for PostgreSQL; sqlite has no schemas]`,
  );
  expect(() =>
    inbox(db.sequelize, { tablePrefix: 'no-dashes' }),
  ).toThrowErrorMatchingInlineSnapshot(
    `[ConfigurationError: inbox(sequelize, { tablePrefix }) must be letters, digits and _ (got "no-dashes")]`,
  );
  expect(() => inbox(db.sequelize, { consumer: '' })).toThrowErrorMatchingInlineSnapshot(
    `[ConfigurationError: inbox(sequelize, { consumer }) must be a non-empty string of at most 255 characters (got "")]`,
  );
  expect(() => inbox({} as never)).toThrowErrorMatchingInlineSnapshot(
    `[ConfigurationError: inbox(sequelize) needs your Sequelize instance]`,
  );
});
