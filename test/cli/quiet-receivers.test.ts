/** Issue 9: `outbox quiet-receivers [--within 1d] [--json]`, an alert probe (exit 2 when any is quiet). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { drainOutbox } from '../../testing/drain.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/ping.config.js';
import { type CliDatabase, openCliDatabase, PING_CONFIG } from './support/cli.js';
import { runCliInProcess } from './support/in-process.js';

describe('outbox quiet-receivers: help', () => {
  it('documents --within, --json and the exit codes', async () => {
    const { stdout, code } = await runCliInProcess(['quiet-receivers', '--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('--within <duration>');
    expect(stdout).toContain('--json');
    expect(stdout).toMatch(
      /Exit codes:\n {2}0 .*\n {2}1 [\s\S]*\n {2}2 {2}at least one receiver is quiet/,
    );
  });
});

describeEachDialect('outbox quiet-receivers', (dialect) => {
  let db: CliDatabase;
  let dir: string;
  let outbox: Outbox<typeof config>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-cli-quiet-'));
    process.env.OUTBOX_TEST_RECEIVED = join(dir, 'received.txt');
  });
  afterAll(() => {
    delete process.env.OUTBOX_TEST_RECEIVED;
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    db = await openCliDatabase(dialect.name);
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
    await outbox.migrate();
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  const cli = (...args: string[]) => runCliInProcess([...args, '-c', PING_CONFIG, ...db.args]);

  /** Move every success `ms` into the past. */
  async function succeededAgo(ms: number) {
    const t = db.outboxOptions.schema ? `"${db.outboxOptions.schema}".` : '';
    const at = new Date(Date.now() - ms);
    await db.outboxOptions.sequelize.query(
      `UPDATE ${t}"outbox_deliveries" SET completed_at = $1, succeeded_at = $1`,
      { bind: [dialect.name === 'sqlite' ? at.getTime() : at] },
    );
    return at;
  }

  it('a receiver that never ran is quiet: listed as never, exit 2; --json says so too', async () => {
    const result = await cli('quiet-receivers');
    expect(result.code).toBe(2);
    expect(result.stdout).toContain('1 receiver is quiet on ');
    expect(result.stdout).toMatch(/test\.record\s+test\.Ping\s+never/);

    const json = await cli('quiet-receivers', '--within', '1d', '--json');
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({
      withinSeconds: 86_400,
      quiet: [{ receiverKey: 'test.record', event: 'test.Ping', lastSucceededAt: null }],
      ok: false,
    });
  });

  it('a success inside --within: nothing quiet, exit 0; one older than it: quiet, with its age, exit 2', async () => {
    await outbox.fire('test.Ping', { n: 1 });
    await drainOutbox(outbox);
    const fresh = await cli('quiet-receivers', '--within', '1d');
    expect([fresh.code, fresh.stdout]).toEqual([
      0,
      expect.stringContaining('no receiver is quiet within 1d 0h on '),
    ]);

    const at = await succeededAgo(2 * 86_400_000 + 60_000);
    const stale = await cli('quiet-receivers', '--within', '1d');
    expect(stale.code).toBe(2);
    expect(stale.stdout).toMatch(
      new RegExp(`test\\.record\\s+test\\.Ping\\s+2d 0h ago \\(${at.toISOString().slice(0, 16)}`),
    );
    const json = await cli('quiet-receivers', '--within', '1d', '--json');
    expect(JSON.parse(json.stdout).quiet).toEqual([
      { receiverKey: 'test.record', event: 'test.Ping', lastSucceededAt: at.toISOString() },
    ]);
    const wider = await cli('quiet-receivers', '--within', '3d', '--json');
    expect([wider.code, JSON.parse(wider.stdout)]).toEqual([
      0,
      expect.objectContaining({ quiet: [], ok: true }),
    ]);
  });

  it('a --within without its unit is refused (exit 1), naming the units', async () => {
    const result = await cli('quiet-receivers', '--within', '5');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('expected a duration with its unit');
  });
});
