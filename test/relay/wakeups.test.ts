import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineOutbox,
  event,
  inProcessWakeup,
  listenNotifyWakeup,
  type Outbox,
  type OutboxWakeup,
  receiver,
} from '../../src/index.js';
import { abortableSleep } from '../../src/relay/run-relay.js';
import { postgresUrl, type TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import { openOutbox, waitFor } from './support.js';

/** A poll interval no test waits out: a delivery that comes fast came from a wakeup. */
const LONG_POLL_MS = 60_000;

describeEachDialect('relay: wakeups', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Ping = event({ schema: z.object({ n: z.number() }) });
  const Pong = event({ schema: z.object({ n: z.number() }) });

  function setup(wakeup: OutboxWakeup | null) {
    const delivered: { n: number; at: number }[] = [];
    const config = defineOutbox({
      events: { 'net.Ping': Ping, 'net.Pong': Pong },
      receivers: {
        'net.echo': receiver(Ping, {
          handle: (e) => void delivered.push({ n: e.payload.n, at: Date.now() }),
        }),
      },
    });
    return { config, delivered, wakeup };
  }

  /**
   * Start a relay whose idle waits are counted: `waits` is how many times it went idle,
   * each a real (abortable) wait of `pollIntervalMs`.
   */
  async function startRelay(outbox: Outbox, pollIntervalMs: number) {
    const stop = new AbortController();
    const idle = { waits: 0 };
    const running = outbox.runRelay({
      signal: stop.signal,
      pollIntervalMs,
      sleep: (ms, signal) => {
        idle.waits += 1;
        return abortableSleep(ms, signal);
      },
    });
    await waitFor(() => idle.waits >= 1, 'the relay to go idle');
    return {
      idle,
      async stop() {
        stop.abort();
        return running;
      },
    };
  }

  it('inProcessWakeup wakes an idle relay right after commit', async () => {
    const { config, delivered } = setup(null);
    const outbox = await openOutbox(db, config, { wakeup: inProcessWakeup() });
    const relay = await startRelay(outbox, LONG_POLL_MS);
    try {
      const committedAt = Date.now();
      await outbox.fire('net.Ping', { n: 1 });
      await waitFor(() => delivered.length === 1, 'the woken relay to deliver', 5_000);
      expect(delivered[0].at - committedAt).toBeLessThan(2_000);
    } finally {
      await relay.stop();
    }
  });

  it('inProcessWakeup sends no signal for a rolled-back transaction, and one coalesced signal for the commit of many events', async () => {
    const wakeup = inProcessWakeup();
    const { config, delivered } = setup(null);
    const outbox = await openOutbox(db, config, { wakeup });
    const signals: (readonly string[])[] = [];
    const unlisten = await wakeup.listen((topics) => void signals.push(topics), {
      connection: { dialect: dialect.name },
    });
    const relay = await startRelay(outbox, LONG_POLL_MS);
    try {
      await db.sequelize
        .transaction(async (transaction) => {
          await outbox.fire('net.Ping', { n: 1 }, { transaction });
          throw new Error('the business change failed');
        })
        .catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(signals).toEqual([]);
      // The idle relay was not woken: it is still in its first wait.
      expect(relay.idle.waits).toBe(1);

      await db.sequelize.transaction(async (transaction) => {
        await outbox.fire('net.Ping', { n: 2 }, { transaction });
        await outbox.fire('net.Ping', { n: 3 }, { transaction });
        await outbox.fire('net.Pong', { n: 4 }, { transaction });
      });
      await waitFor(() => delivered.length === 2, 'the woken relay to deliver');
      // One signal for the transaction, naming the topic owed to a relay (Pong has no
      // durable receiver, so there is nothing to wake a relay for).
      expect(signals).toEqual([['net.Ping']]);
      expect(delivered.map((d) => d.n).sort()).toEqual([2, 3]);
    } finally {
      await relay.stop();
      await unlisten();
    }
  });

  it('the poll still delivers when no wakeup is configured', async () => {
    const { config, delivered } = setup(null);
    const outbox = await openOutbox(db, config, { wakeup: null });
    const relay = await startRelay(outbox, 20);
    try {
      await outbox.fire('net.Ping', { n: 1 });
      await waitFor(() => delivered.length === 1, 'the polling relay to deliver', 5_000);
      expect(relay.idle.waits).toBeGreaterThanOrEqual(1);
    } finally {
      await relay.stop();
    }
  });

  if (dialect.name === 'postgres') {
    it('listenNotifyWakeup wakes a relay on commit, and not on rollback', async () => {
      const channel = `obk_${randomBytes(5).toString('hex')}`;
      const wakeup = listenNotifyWakeup({ channel });
      const { config, delivered } = setup(null);
      const outbox = await openOutbox(db, config, { wakeup });
      const signals: (readonly string[])[] = [];
      const relay = await startRelay(outbox, LONG_POLL_MS);
      // A second listener on the same wakeup, to see the signals themselves.
      const url = new URL(postgresUrl());
      const unlisten = await wakeup.listen((topics) => void signals.push(topics), {
        connection: {
          dialect: 'postgres',
          host: url.hostname,
          port: Number(url.port || 5432),
          user: decodeURIComponent(url.username),
          database: url.pathname.slice(1),
        },
      });
      try {
        await db.sequelize
          .transaction(async (transaction) => {
            await outbox.fire('net.Ping', { n: 1 }, { transaction });
            throw new Error('the business change failed');
          })
          .catch(() => {});
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(signals).toEqual([]);
        expect(relay.idle.waits).toBe(1);

        const committedAt = Date.now();
        await db.sequelize.transaction(async (transaction) => {
          await outbox.fire('net.Ping', { n: 2 }, { transaction });
          await outbox.fire('net.Ping', { n: 3 }, { transaction });
        });
        await waitFor(() => delivered.length === 2, 'the notified relay to deliver', 5_000);
        expect(Date.now() - committedAt).toBeLessThan(2_000);
        // PostgreSQL folds the repeats of one transaction into one notification.
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(signals).toEqual([['net.Ping']]);
      } finally {
        await unlisten();
        await relay.stop();
        await outbox.close();
      }
    });
  }
});
