import { QueryTypes } from 'sequelize';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { describeEachDialect } from '../support/dialects.js';
import { type CliDatabase, openCliDatabase, PING_CONFIG } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

/**
 * The outbox's tables; SQLite also gets the single-relay lock (it cannot skip locked rows),
 * MariaDB the ordering keys' lock slots (it has no advisory locks that end with a transaction).
 */
function expectedTables(dialect: CliDatabase['dialect']): string[] {
  const tables = [
    'outbox_deliveries',
    'outbox_events',
    'outbox_migrations',
    'outbox_receiver_last_success',
  ];
  if (dialect === 'sqlite') return [...tables, 'outbox_relay_lock'];
  if (dialect === 'mariadb' || dialect === 'mysql') return [...tables, 'outbox_key_locks'].sort();
  return tables;
}

async function tablesOf(db: CliDatabase): Promise<string[]> {
  const { sequelize, schema } = db.outboxOptions;
  const rows =
    db.dialect === 'mariadb' || db.dialect === 'mysql'
      ? await sequelize.query<{ name: string }>(
          'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY 1',
          { type: QueryTypes.SELECT },
        )
      : db.dialect === 'postgres'
        ? await sequelize.query<{ name: string }>(
            'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? ORDER BY 1',
            { replacements: [schema], type: QueryTypes.SELECT },
          )
        : await sequelize.query<{ name: string }>(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'outbox%' ORDER BY 1",
            { type: QueryTypes.SELECT },
          );
  return rows.map((r) => r.name);
}

async function migrationsOf(db: CliDatabase): Promise<{ version: number }[]> {
  const { sequelize, schema } = db.outboxOptions;
  const table = schema ? `"${schema}"."outbox_migrations"` : 'outbox_migrations';
  return sequelize.query(`SELECT version, applied_at FROM ${table} ORDER BY version`, {
    type: QueryTypes.SELECT,
  });
}

describeEachDialect('outbox migrate', (dialect) => {
  let db: CliDatabase;
  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
  });
  afterEach(() => db.cleanup());

  it('creates the outbox tables, and running it again changes nothing', async () => {
    const first = await runCliInProcess(['migrate', '-c', PING_CONFIG, ...db.args]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^outbox: migrated /);
    expect(await tablesOf(db)).toEqual(expectedTables(dialect.name));
    const applied = await migrationsOf(db);
    expect(applied.length).toBeGreaterThan(0);

    const second = await runCliInProcess(['migrate', '-c', PING_CONFIG, ...db.args]);
    expect(second.stderr).toBe('');
    expect(second.code).toBe(0);
    expect(await tablesOf(db)).toEqual(expectedTables(dialect.name));
    expect(await migrationsOf(db)).toEqual(applied);
  });

  it('run twice at once (two connections), both succeed and each migration is applied once', async () => {
    const args = ['migrate', '-c', PING_CONFIG, ...db.args];
    const [a, b] = await Promise.all([runCliInProcess(args), runCliInProcess(args)]);
    expect([a.code, a.stderr, b.code, b.stderr]).toEqual([0, '', 0, '']);
    expect(await tablesOf(db)).toEqual(expectedTables(dialect.name));
    const versions = (await migrationsOf(db)).map((m) => m.version);
    expect(versions.length).toBeGreaterThan(0);
    expect(new Set(versions).size).toBe(versions.length);
  });
});
