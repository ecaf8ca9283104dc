/**
 * `npx outbox migrate --inbox`: the outbox's tables, then the consumer inbox's (the CLI run
 * in-process, test/cli/support/in-process.ts).
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { inbox } from '../../src/index.js';
import { type CliDatabase, openCliDatabase, PING_CONFIG } from '../cli/support/cli.js';
import { runCliInProcess } from '../cli/support/in-process.js';
import { describeEachDialect } from '../support/dialects.js';

const ID = '01890a5d-ac96-774b-bcce-b302099a8057';

describeEachDialect('outbox migrate --inbox', (dialect) => {
  let db: CliDatabase;
  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
  });
  afterEach(() => db.cleanup());

  const box = () => inbox(db.outboxOptions.sequelize, { schema: db.outboxOptions.schema });

  it('creates the inbox table beside the outbox tables; --check passes only once both are current', async () => {
    const check = () =>
      runCliInProcess(['migrate', '--check', '--inbox', '-c', PING_CONFIG, ...db.args]);
    // The outbox alone migrated: the inbox is still behind.
    expect((await runCliInProcess(['migrate', '-c', PING_CONFIG, ...db.args])).code).toBe(0);
    const behind = await check();
    expect(behind.code).toBe(2);
    expect(behind.stderr).toMatch(/the inbox is behind: every migration \(its table is missing\)/);

    const first = await runCliInProcess(['migrate', '--inbox', '-c', PING_CONFIG, ...db.args]);
    expect([first.code, first.stderr]).toEqual([0, '']);
    expect(first.stdout).toMatch(/already up to date; inbox: applied migration 1/);
    const again = await runCliInProcess(['migrate', '--inbox', '-c', PING_CONFIG, ...db.args]);
    expect(again.stdout).toMatch(/already up to date; inbox already up to date/);
    const current = await check();
    expect(current.code).toBe(0);
    expect(current.stdout).toMatch(/is up to date \(migrations .*; inbox migrations 1\)/);
    expect((await box().handle({ id: ID }, () => 1)).status).toBe('processed');
  });

  it('--print-sql --inbox prints both scripts without a database, and running it migrates both', async () => {
    const printed = await runCliInProcess([
      'migrate',
      '--print-sql',
      '--inbox',
      '--dialect',
      dialect.name,
      ...db.schemaArgs,
    ]);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toContain('outbox_deliveries');
    expect(printed.stdout).toContain('-- inbox version 1');
    for (const statement of printed.stdout
      .split(/;\n/)
      .map((s) => s.replace(/^--.*$/gm, '').trim()))
      if (statement) await db.outboxOptions.sequelize.query(statement);
    const check = await runCliInProcess([
      'migrate',
      '--check',
      '--inbox',
      '-c',
      PING_CONFIG,
      ...db.args,
    ]);
    expect(check.code).toBe(0);
    expect((await box().handle({ id: ID }, () => 1)).status).toBe('processed');
  });
});

it('--emit with --inbox is refused, naming what to do instead', async () => {
  const refused = await runCliInProcess([
    'migrate',
    '--emit',
    'umzug',
    '--inbox',
    '--dialect',
    'sqlite',
  ]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(
    /--inbox goes with a plain migrate, --print-sql or --check, not --emit/,
  );
});
