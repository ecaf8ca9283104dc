import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { describeEachDialect } from '../support/dialects.js';
import config from './fixtures/ping.config.js';
import {
  type CliDatabase,
  openCliDatabase,
  PING_CONFIG,
  receivedNumbers,
  waitFor,
} from './support/cli.js';
import { runCliInProcess, startCliInProcess } from './support/in-process.js';

describeEachDialect('outbox relay', (dialect) => {
  let db: CliDatabase;
  let dir: string;
  let received: string;
  let outbox: Outbox<typeof config>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-cli-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
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

  async function firePings(count: number, orderingKey?: string): Promise<void> {
    await outbox.fireMany(
      Array.from({ length: count }, (_, n) => ({
        name: 'test.Ping' as const,
        payload: { n },
        orderingKey,
      })),
    );
  }

  it('--once delivers what is owed, in order per ordering key, and exits 0', async () => {
    // One key: its events are promised in order even with the relay's default concurrency.
    await firePings(12, 'pings');
    const result = await runCliInProcess(['relay', '--once', '-c', PING_CONFIG, ...db.args], {
      env: { OUTBOX_TEST_RECEIVED: received },
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('succeeded 12, failed 0, dead 0');
    expect(receivedNumbers(received)).toEqual([...Array(12).keys()]);
    expect(await outbox.countDeliveries()).toMatchObject({ succeeded: 12, pending: 0, claimed: 0 });
  });

  it('SIGTERM finishes the delivery in hand, hands the rest back and exits 0', async () => {
    await firePings(30);
    const relay = startCliInProcess(
      ['relay', '-c', PING_CONFIG, '--concurrency', '1', ...db.args],
      { env: { OUTBOX_TEST_RECEIVED: received, OUTBOX_TEST_DELAY_MS: '100' } },
    );
    await waitFor(() => receivedNumbers(received).length >= 2, 'the relay to deliver two events');
    relay.stop('SIGTERM');
    const result = await relay.done;
    expect(result.stderr).toContain('outbox: stopping (SIGTERM)');
    expect(result.code).toBe(0);

    // Everything the relay delivered is recorded as delivered, in order.
    const delivered = receivedNumbers(received);
    expect(delivered.length).toBeLessThan(30);
    expect(delivered).toEqual([...Array(delivered.length).keys()]);
    expect(result.stderr).toContain(`succeeded ${delivered.length},`);
    expect((await outbox.countDeliveries()).succeeded).toBe(delivered.length);

    // The rest was handed back: the next relay takes it at once rather than after the
    // stopped relay's 60 s lease (and, on SQLite, could start at all: the stopped relay
    // released its single-relay lock). Each event is delivered exactly once, in order.
    process.env.OUTBOX_TEST_RECEIVED = received;
    try {
      const report = await outbox.runRelay({ passes: 1, batchSize: 100, concurrency: 1 });
      expect(report.succeeded).toBe(30 - delivered.length);
    } finally {
      delete process.env.OUTBOX_TEST_RECEIVED;
    }
    expect(receivedNumbers(received)).toEqual([...Array(30).keys()]);
    expect(await outbox.countDeliveries()).toMatchObject({ succeeded: 30, pending: 0, claimed: 0 });
  }, 60_000);

  if (dialect.name === 'sqlite') {
    it("a relay refused by a killed relay's lock says when it lapses, and --allow-unsafe-concurrency starts it anyway", async () => {
      await firePings(3, 'pings');
      // A relay that took the lock and was killed with -9.
      const lock = runtimeOf(outbox).store.relayLock!;
      const now = new Date();
      await lock.acquire('killed-relay', now, new Date(now.getTime() + 15_000));
      const refused = await runCliInProcess(['relay', '--once', '-c', PING_CONFIG, ...db.args], {
        env: { OUTBOX_TEST_RECEIVED: received },
      });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/\(killed-relay\) until \S+Z, \d+ s from now/);
      expect(refused.stderr).toContain('--allow-unsafe-concurrency');
      const forced = await runCliInProcess(
        ['relay', '--once', '--allow-unsafe-concurrency', '-c', PING_CONFIG, ...db.args],
        { env: { OUTBOX_TEST_RECEIVED: received } },
      );
      expect(forced.code).toBe(0);
      expect(receivedNumbers(received)).toEqual([0, 1, 2]);
    });
  }
});
