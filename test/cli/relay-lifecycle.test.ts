/**
 * Issue 12 items 3–6 and 18 (--log-format): the relay from start to exit — a database it
 * cannot use, exit codes, closing what it used, stopping. In-process; what only a real
 * process shows (its signals, --shutdown-timeout's exit 3, that it exits at once) is in
 * bin-relay.test.ts.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { postgresTestSchema, postgresUrl, withSearchPath } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/ping.config.js';
import {
  APP_CONFIG,
  type CliDatabase,
  openCliDatabase,
  PING_CONFIG,
  waitFor,
} from './support/cli.js';
import { runCliInProcess, startCliInProcess } from './support/in-process.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'outbox-cli-life-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('outbox relay and a database it cannot use', () => {
  it('exits 1 at once for an unreachable server', async () => {
    const result = await runCliInProcess(
      ['relay', '--once', '-c', PING_CONFIG, '--url', 'postgres://postgres@127.0.0.1:1/test'],
      { timeoutMs: 10_000 },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'could not reach the database postgres://postgres@127.0.0.1:1/test',
    );
  });

  it('gives up after --connect-timeout on a server that never answers', async () => {
    const started = Date.now();
    const result = await runCliInProcess(
      [
        'relay',
        '--once',
        '-c',
        PING_CONFIG,
        '--url',
        'postgres://postgres@10.255.255.1:5432/test',
        '--connect-timeout',
        '300',
      ],
      { timeoutMs: 10_000 },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'could not reach the database postgres://postgres@10.255.255.1',
    );
    expect(Date.now() - started).toBeLessThan(8_000);
  });

  it('refuses a SQLite file that is not there, and does not create it', async () => {
    const file = join(dir, 'nowhere.sqlite');
    const result = await runCliInProcess([
      'relay',
      '--once',
      '-c',
      PING_CONFIG,
      '--url',
      `sqlite:${file}`,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('npx outbox migrate');
    expect(existsSync(file)).toBe(false);
  });
});

describeEachDialect('outbox relay lifecycle', (dialect) => {
  let db: CliDatabase;
  let received: string;
  let outbox: Outbox<typeof config>;
  beforeEach(async (ctx) => {
    db = await openCliDatabase(dialect.name);
    received = join(dir, `${ctx.task.id}.txt`);
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });
  const fire = (count: number) =>
    outbox.fireMany(
      Array.from({ length: count }, (_, n) => ({ name: 'test.Ping' as const, payload: { n } })),
    );

  it('on an unmigrated database, says to run `npx outbox migrate` and exits 1', async () => {
    const result = await runCliInProcess(['relay', '--once', '-c', PING_CONFIG, ...db.args]);
    expect(result.code).toBe(1);
    // PostgreSQL: the schema has no outbox tables; SQLite: the file is not even there.
    expect(result.stderr).toMatch(
      /the outbox tables are missing\. Run `npx outbox migrate`|there is no SQLite database at .*npx outbox migrate/,
    );
  });

  it('--once exits 2 when deliveries failed, and 0 when all were delivered', async () => {
    await outbox.migrate();
    await fire(3);
    const failing = await runCliInProcess(['relay', '--once', '-c', PING_CONFIG, ...db.args], {
      env: { OUTBOX_TEST_RECEIVED: received, OUTBOX_TEST_FAIL: '1' },
    });
    // Three failed; a retry whose jittered backoff is already due is claimed again by the
    // same run (--once stops at the first pass that finds nothing owed), so it may be more.
    expect(failing.stderr).toMatch(/succeeded 0, failed ([3-9]|\d\d+),/);
    expect(failing.code).toBe(2);
    await fire(2);
    const ok = await runCliInProcess(['relay', '--once', '-c', PING_CONFIG, ...db.args], {
      env: { OUTBOX_TEST_RECEIVED: received },
    });
    expect(ok.stderr).toMatch(/succeeded [2-5], failed 0, dead 0/);
    expect(ok.code).toBe(0);
  });

  it('stops with exit 1 on a database error that is not transient, instead of retrying it', async () => {
    await outbox.migrate();
    const relay = startCliInProcess([
      'relay',
      '-c',
      PING_CONFIG,
      '--poll-interval',
      '50',
      ...db.args,
    ]);
    await waitFor(() => relay.output().stderr.includes('relay running'), 'the relay to start');
    const { sequelize, schema } = db.outboxOptions;
    await sequelize.query(`DROP TABLE ${schema ? `"${schema}".` : ''}outbox_deliveries`);
    const result = await relay.done;
    expect(result.stderr).toContain('a database error that is not transient');
    expect(result.code).toBe(1);
  });

  it('--log-format json writes one JSON object a line', async () => {
    await outbox.migrate();
    await fire(1);
    const result = await runCliInProcess(
      ['relay', '--once', '--log-format', 'json', '-c', PING_CONFIG, ...db.args],
      { env: { OUTBOX_TEST_RECEIVED: received } },
    );
    expect(result.code).toBe(0);
    const lines = result.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.msg)).toEqual([
      expect.stringContaining('relay running on'),
      expect.stringContaining('relay stopped — succeeded 1'),
    ]);
    expect(lines[1]).toMatchObject({ level: 'info', report: { succeeded: 1 } });
  });
});

describe.skipIf(!inject('pgAvailable'))(
  'outbox with the PostgreSQL sequelize a config exports',
  () => {
    let schema: Awaited<ReturnType<typeof postgresTestSchema>>;
    let env: Record<string, string>;
    beforeEach(async (ctx) => {
      schema = await postgresTestSchema();
      env = {
        OUTBOX_TEST_APP_DB: withSearchPath(postgresUrl(), schema.outboxOptions.schema!),
        OUTBOX_TEST_RECEIVED: join(dir, `${ctx.task.id}.txt`),
      };
    });
    afterEach(() => schema.cleanup());

    it('migrate and relay --once work through it, and return at once', async () => {
      for (const args of [['migrate'], ['relay', '--once']]) {
        const started = Date.now();
        const result = await runCliInProcess([...args, '-c', APP_CONFIG], { env });
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout + result.stderr).toMatch(/the sequelize \S*app\.config\.ts exports/);
        // The fixture's idle pool (60 s) is closed, not waited out.
        expect(Date.now() - started).toBeLessThan(30_000);
      }
    });

    it('a stopped relay returns right after `relay stopped`', async () => {
      expect((await runCliInProcess(['migrate', '-c', APP_CONFIG], { env })).code).toBe(0);
      const relay = startCliInProcess(['relay', '-c', APP_CONFIG], { env });
      await waitFor(() => relay.output().stderr.includes('relay running'), 'the relay to start');
      relay.stop('SIGTERM');
      await waitFor(() => relay.output().stderr.includes('relay stopped'), 'relay stopped');
      const stoppedAt = Date.now();
      const result = await relay.done;
      expect(result.code).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(1_500);
    });
  },
);
