/**
 * Issue 12 item 9: the outbox's migrations through the app's own tool — `--print-sql`,
 * `--emit umzug|sequelize-cli` — and `migrate --check`. A database migrated only by what
 * they produce is one the CLI and the relay take as up to date.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { describeEachDialect } from '../support/dialects.js';
import { type CliDatabase, openCliDatabase, PING_CONFIG, REPO } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

/** A config declaring `order_id bigint` (indexed) and `paid boolean` event columns. */
const COLUMNS_CONFIG = join(REPO, 'test/cli/fixtures/columns.config.ts');

describeEachDialect('outbox migrate through your own tool', (dialect) => {
  let db: CliDatabase;
  let dir: string;
  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
    dir = mkdtempSync(join(tmpdir(), 'outbox-cli-emit-'));
  });
  afterEach(async () => {
    await db.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const check = () => runCliInProcess(['migrate', '--check', '-c', PING_CONFIG, ...db.args]);

  it('--check exits 2 while migrations are pending, 0 once applied', async () => {
    const before = await check();
    expect(before.code).toBe(2);
    expect(before.stderr).toMatch(
      /is behind: every migration \(the tables are missing\) pending|every migration is pending/,
    );
    expect((await runCliInProcess(['migrate', '-c', PING_CONFIG, ...db.args])).code).toBe(0);
    const after = await check();
    expect(after.code).toBe(0);
    expect(after.stdout).toContain('is up to date (migrations 1, 2, 3, 4, 5, 6)');
  });

  it('--print-sql --dialect prints the DDL without a database, and running it migrates', async () => {
    const printed = await runCliInProcess([
      'migrate',
      '--print-sql',
      '--dialect',
      dialect.name,
      ...db.schemaArgs,
    ]);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain('CREATE TABLE IF NOT EXISTS');
    expect(printed.stdout).toContain('outbox_deliveries');
    expect(printed.stdout).toContain('-- version 1');
    const sequelize = db.outboxOptions.sequelize;
    for (const statement of printed.stdout
      .split(/;\n/)
      .map((s) => s.replace(/^--.*$/gm, '').trim()))
      if (statement) await sequelize.query(statement);
    expect((await check()).code).toBe(0);
  });

  /** Run each statement of a printed script, its comments dropped. */
  async function runPrinted(text: string): Promise<void> {
    for (const statement of text.split(/;\n/).map((s) => s.replace(/^--.*$/gm, '').trim()))
      if (statement) await db.outboxOptions.sequelize.query(statement);
  }
  const checkColumns = () =>
    runCliInProcess(['migrate', '--check', '-c', COLUMNS_CONFIG, ...db.args]);

  it('--print-sql --dialect prints every declared event column and index, and running it leaves nothing pending', async () => {
    const printed = await runCliInProcess([
      'migrate',
      '--print-sql',
      '--dialect',
      dialect.name,
      '-c',
      COLUMNS_CONFIG,
      ...db.schemaArgs,
    ]);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/ALTER TABLE \S+ ADD COLUMN order_id \w+/);
    expect(printed.stdout).toMatch(/ALTER TABLE \S+ ADD COLUMN paid \w+/);
    expect(printed.stdout).toMatch(
      /CREATE INDEX \S*outbox_events_col_order_id\S* ON \S+ \(order_id/,
    );
    expect(printed.stdout).not.toContain('events_col_paid');
    // After the library's DDL.
    expect(printed.stdout.indexOf('ADD COLUMN order_id')).toBeGreaterThan(
      printed.stdout.lastIndexOf('-- version '),
    );
    await runPrinted(printed.stdout);
    const checked = await checkColumns();
    expect(checked.stderr).toBe('');
    expect(checked.code).toBe(0);
  });

  it('--print-sql with a database prints only the event columns its table lacks', async () => {
    // The library's tables, no event column yet.
    expect((await runCliInProcess(['migrate', '-c', PING_CONFIG, ...db.args])).code).toBe(0);
    expect((await checkColumns()).code).toBe(2);
    const args = ['migrate', '--print-sql', '-c', COLUMNS_CONFIG, ...db.args];
    const printed = await runCliInProcess(args);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain('ADD COLUMN order_id');
    expect(printed.stdout).toContain('ADD COLUMN paid');
    expect(printed.stdout).toContain('outbox_events_col_order_id');
    await runPrinted(printed.stdout);
    expect((await checkColumns()).code).toBe(0);
    // Up to date: the library's idempotent DDL, no event-column statement.
    const again = await runCliInProcess(args);
    expect(again.code).toBe(0);
    expect(again.stdout).not.toContain('ADD COLUMN order_id');
    expect(again.stdout).not.toContain('CREATE INDEX "outbox_events_col');
    expect(again.stdout).toContain('nothing: the table has every declared column and index');
  });

  it.each(['sequelize-cli', 'umzug'] as const)(
    '--emit %s writes a migration file that migrates, once',
    async (tool) => {
      const args = ['migrate', '--emit', tool, '--out', dir, '-c', PING_CONFIG, ...db.args];
      const first = await runCliInProcess(args);
      expect(first.code).toBe(0);
      // One file per migration version.
      const names = readdirSync(dir).sort();
      expect(names).toHaveLength(6);
      names.forEach((name, i) => {
        expect(name).toMatch(new RegExp(`^\\d{14}-outboxkit-v${i + 1}\\.(cjs|mjs)$`));
      });
      const second = await runCliInProcess(args);
      expect(second.stdout).toContain('is already there');
      expect(readdirSync(dir).sort()).toEqual(names);

      const sequelize = db.outboxOptions.sequelize;
      for (const name of names) {
        const path = join(dir, name);
        if (tool === 'sequelize-cli') {
          const migration = createRequire(import.meta.url)(path);
          await migration.up(sequelize.getQueryInterface(), sequelize.constructor);
        } else {
          const migration = await import(pathToFileURL(path).href);
          await migration.up({ context: sequelize.getQueryInterface() });
        }
      }
      expect((await check()).code).toBe(0);
    },
  );

  /** Run each emitted file in name order, as the tool would. */
  async function runEmitted(tool: 'sequelize-cli' | 'umzug', names: readonly string[]) {
    const sequelize = db.outboxOptions.sequelize;
    for (const name of names) {
      const path = join(dir, name);
      if (tool === 'sequelize-cli') {
        const migration = createRequire(import.meta.url)(path);
        await migration.up(sequelize.getQueryInterface(), sequelize.constructor);
      } else {
        const migration = await import(pathToFileURL(path).href);
        await migration.up({ context: sequelize.getQueryInterface() });
      }
    }
  }

  it.each(['sequelize-cli', 'umzug'] as const)(
    "--emit %s writes a file per event column and per index, after the library's, that migrate once and are no-ops on a migrated table",
    async (tool) => {
      const args = ['migrate', '--emit', tool, '--out', dir, '-c', COLUMNS_CONFIG, ...db.args];
      expect((await runCliInProcess(args)).code).toBe(0);
      const names = readdirSync(dir).sort();
      expect(names).toHaveLength(9);
      expect(names.slice(6).map((n) => n.replace(/^\d{14}-/, ''))).toEqual([
        `outboxkit-column-order_id.${tool === 'umzug' ? 'mjs' : 'cjs'}`,
        `outboxkit-column-paid.${tool === 'umzug' ? 'mjs' : 'cjs'}`,
        `outboxkit-index-order_id.${tool === 'umzug' ? 'mjs' : 'cjs'}`,
      ]);
      expect(names.slice(0, 6).every((n) => /-outboxkit-v\d\./.test(n))).toBe(true);
      // Emitting again writes nothing.
      const second = await runCliInProcess(args);
      expect(second.stdout).toContain('is already there (event column order_id)');
      expect(readdirSync(dir).sort()).toEqual(names);

      await runEmitted(tool, names);
      const checked = await checkColumns();
      expect(checked.stderr).toBe('');
      expect(checked.code).toBe(0);
      // Run again (a database migrated already): each file changes nothing.
      await runEmitted(tool, names);
      expect((await checkColumns()).code).toBe(0);
    },
  );
});
