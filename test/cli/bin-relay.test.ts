/**
 * `outbox relay` as production runs it: `node bin/outbox.js relay …`, the compiled CLI
 * (dist/, `npm run build`) in a process of its own, for what only a real process shows —
 * real SIGTERMs, real exit codes, `--shutdown-timeout` abandoning a delivery the exit then
 * ends, and a process that exits at once. Everything else about the relay runs in-process
 * (relay.test.ts, relay-lifecycle.test.ts, …).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryTypes } from 'sequelize';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { postgresTestSchema, postgresUrl, withSearchPath } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/ping.config.js';
import {
  APP_CONFIG,
  type CliDatabase,
  COMPILED_CLI,
  openCliDatabase,
  PING_CONFIG,
  receivedNumbers,
  runCli,
  startCli,
  waitFor,
} from './support/cli.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'outbox-cli-bin-relay-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('node bin/outbox.js relay, as production runs it', () => {
  let db: CliDatabase;
  let outbox: Outbox<typeof config>;
  beforeEach(async () => {
    expect(existsSync(COMPILED_CLI), `${COMPILED_CLI} is missing: run npm run build`).toBe(true);
    db = await openCliDatabase('sqlite');
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
    await outbox.migrate();
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });
  const fire = (count: number) =>
    outbox.fireMany(
      Array.from({ length: count }, (_, n) => ({ name: 'test.Ping' as const, payload: { n } })),
    );

  it('drains on SIGTERM and exits 0', async () => {
    const received = join(dir, 'drain.txt');
    await fire(20);
    const relay = startCli(['relay', '-c', PING_CONFIG, '--concurrency', '1', ...db.args], {
      env: { OUTBOX_TEST_RECEIVED: received, OUTBOX_TEST_DELAY_MS: '50' },
    });
    await waitFor(() => receivedNumbers(received).length >= 2, 'two deliveries');
    relay.child.kill('SIGTERM');
    const result = await relay.done;
    expect(result.stderr).toContain('outbox: stopping (SIGTERM)');
    expect(result.stderr).toContain('relay stopped');
    expect(result.code).toBe(0);
    const counts = await outbox.countDeliveries();
    expect(counts.claimed).toBe(0);
    expect(counts.succeeded).toBe(receivedNumbers(received).length);
  });

  it('--once exits 2 when deliveries failed, and 0 when all were delivered', async () => {
    const received = join(dir, 'once.txt');
    await fire(2);
    const failing = await runCli(['relay', '--once', '-c', PING_CONFIG, ...db.args], {
      env: { OUTBOX_TEST_RECEIVED: received, OUTBOX_TEST_FAIL: '1' },
    });
    expect(failing.stderr).toMatch(/succeeded 0, failed ([2-9]|\d\d+),/);
    expect(failing.code).toBe(2);
    await fire(1);
    const ok = await runCli(['relay', '--once', '-c', PING_CONFIG, ...db.args], {
      env: { OUTBOX_TEST_RECEIVED: received },
    });
    expect(ok.stderr).toMatch(/succeeded [1-3], failed 0, dead 0/);
    expect(ok.code).toBe(0);
  });
});

describeEachDialect('node bin/outbox.js relay --shutdown-timeout', (dialect) => {
  let db: CliDatabase;
  let received: string;
  let outbox: Outbox<typeof config>;
  beforeEach(async (ctx) => {
    db = await openCliDatabase(dialect.name);
    received = join(dir, `${ctx.task.id}.txt`);
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
    await outbox.migrate();
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  // A process's exit is what ends the abandoned handler (and, on SQLite, rolls its
  // transaction back): in-process there is no such end, so this runs the bin.
  it('--shutdown-timeout hands the deliveries still in flight back, names them and exits 3', async () => {
    await outbox.fire('test.Ping', { n: 0 });
    const started = `${received}.started`;
    const relay = startCli(['relay', '-c', PING_CONFIG, '--shutdown-timeout', '200', ...db.args], {
      env: {
        OUTBOX_TEST_RECEIVED: received,
        OUTBOX_TEST_DELAY_MS: '20000',
        OUTBOX_TEST_STARTED: started,
      },
    });
    await waitFor(() => relay.output().stderr.includes('relay running'), 'the relay to start');
    const { sequelize, schema } = db.outboxOptions;
    const claimed = async () =>
      (
        await sequelize.query<{ n: number }>(
          `SELECT count(*) AS n FROM ${schema ? `"${schema}".` : ''}outbox_deliveries WHERE status = 'claimed'`,
          { type: QueryTypes.SELECT },
        )
      )[0].n;
    await waitFor(async () => Number(await claimed()) > 0, 'the relay to claim the delivery');
    // In hand, not merely claimed: a row claimed but not yet started is handed back at once
    // (exit 0), which is not what this test is about.
    await waitFor(
      () => existsSync(started) && readFileSync(started, 'utf8').length > 0,
      'the handler to start',
    );
    relay.child.kill('SIGTERM');
    const result = await relay.done;
    expect(result.code).toBe(3);
    // Handed back, uncharged, where the database lets it run beside the handler (PostgreSQL,
    // MariaDB: many writers); SQLite's
    // one write lock is held by the running handler, so there the lease does it.
    const [row] = await sequelize.query<{ status: string; attempts: number }>(
      `SELECT status, attempts FROM ${schema ? `"${schema}".` : ''}outbox_deliveries`,
      { type: QueryTypes.SELECT },
    );
    if (dialect.name !== 'sqlite') {
      expect(result.stderr).toMatch(
        /shutdown timeout: handed back 1 of 1 deliveries in flight \(#\d+ test\.record\)/,
      );
      expect(row).toMatchObject({ status: 'pending', attempts: 0 });
    } else {
      expect(result.stderr).toMatch(
        /shutdown timeout: abandoning 1 deliveries in flight \(#\d+ test\.record\); they could not be handed back/,
      );
      expect(row.status).toBe('claimed');
    }
  });
});

describe.skipIf(!inject('pgAvailable'))(
  'node bin/outbox.js with the PostgreSQL sequelize a config exports',
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

    it('migrate and relay --once close its pool and exit at once', async () => {
      for (const args of [['migrate'], ['relay', '--once']]) {
        const started = Date.now();
        const result = await runCli([...args, '-c', APP_CONFIG], { env });
        expect(result.code, result.stderr).toBe(0);
        // The fixture's idle pool (60 s) would hold the process a minute; a slow start on a
        // loaded machine takes seconds, not that.
        expect(Date.now() - started).toBeLessThan(30_000);
      }
    });

    it('a SIGTERMed relay exits right after `relay stopped`', async () => {
      expect((await runCli(['migrate', '-c', APP_CONFIG], { env })).code).toBe(0);
      const relay = startCli(['relay', '-c', APP_CONFIG], { env });
      await waitFor(() => relay.output().stderr.includes('relay running'), 'the relay to start');
      relay.child.kill('SIGTERM');
      await waitFor(() => relay.output().stderr.includes('relay stopped'), 'relay stopped');
      const stoppedAt = Date.now();
      const result = await relay.done;
      expect(result.code).toBe(0);
      expect(Date.now() - stoppedAt).toBeLessThan(1_500);
    });
  },
);
