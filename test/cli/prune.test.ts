import { afterEach, beforeEach, expect, it } from 'vitest';
import { parseWindow } from '../../cli/commands/prune.js';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/ping.config.js';
import { type CliDatabase, openCliDatabase, PING_CONFIG } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

describeEachDialect('outbox prune', (dialect) => {
  let db: CliDatabase;
  let outbox: Outbox<typeof config>;

  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
    await outbox.migrate();
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  /** Three events, delivered (their rows succeeded), and one still owed. */
  async function seed(): Promise<void> {
    await outbox.fireMany([0, 1, 2].map((n) => ({ name: 'test.Ping' as const, payload: { n } })));
    const t = db.outboxOptions.schema ? `"${db.outboxOptions.schema}".` : '';
    const ms = (d: Date) => (dialect.name === 'sqlite' ? d.getTime() : d);
    await db.outboxOptions.sequelize.query(
      `UPDATE ${t}"outbox_deliveries" SET status = 'succeeded', completed_at = $1, succeeded_at = $1`,
      { bind: [ms(new Date(Date.now() - 1000))] },
    );
    await outbox.fire('test.Ping', { n: 3 });
  }

  const events = async () => (await runtimeOf(outbox).store.readEvents({})).length;

  it('--dry-run counts what is due and deletes nothing', async () => {
    await seed();
    const recent = await runCliInProcess(['prune', '--dry-run', '-c', PING_CONFIG, ...db.args]);
    expect(recent.code).toBe(0);
    expect(recent.stdout).toContain('0 events are due');
    const json = await runCliInProcess([
      'prune',
      '--dry-run',
      '--older-than',
      '0s',
      '--json',
      '-c',
      PING_CONFIG,
      ...db.args,
    ]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout.trim())).toMatchObject({ dryRun: true, events: 3 });
    expect(await events()).toBe(4);
  });

  it('prunes batch by batch, one line per batch when not a TTY, and never an owed event', async () => {
    await seed();
    const result = await runCliInProcess([
      'prune',
      '--older-than',
      '0s',
      '--batch-size',
      '2',
      '-c',
      PING_CONFIG,
      ...db.args,
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr.match(/batch \d+: 1 events, 1 delivery rows/g)).toHaveLength(3);
    expect(result.stdout).toContain('pruned 3 events and 3 delivery rows in 3 batches');
    expect(await events()).toBe(1);
  });

  it('--json prints the result as one JSON object and each batch as a JSON line', async () => {
    await seed();
    const result = await runCliInProcess([
      'prune',
      '--older-than',
      '0s',
      '--json',
      '-c',
      PING_CONFIG,
      ...db.args,
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout.trim())).toMatchObject({
      dryRun: false,
      events: 3,
      deliveries: 3,
      batches: 1,
      stopped: false,
    });
    const lines = result.stderr
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{"batch"'))
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([
      { batch: 1, events: 3, deliveries: 3, totalEvents: 3, totalDeliveries: 3 },
    ]);
  });

  it('refuses a window without a unit, exit 1', async () => {
    const result = await runCliInProcess([
      'prune',
      '--older-than',
      '7',
      '-c',
      PING_CONFIG,
      ...db.args,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("option '--older-than <window>' argument '7' is invalid");
    expect(await events()).toBe(0);
  });
});

it('parses --older-than in days, hours, minutes and seconds', () => {
  expect(parseWindow('7d')).toBe(7 * 86_400);
  expect(parseWindow('36h')).toBe(36 * 3_600);
  expect(parseWindow('90m')).toBe(5_400);
  expect(parseWindow('1.5d')).toBe(129_600);
  expect(() => parseWindow('7 weeks')).toThrow('expected a number and a unit');
});
