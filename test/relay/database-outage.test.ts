import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { Sequelize } from 'sequelize';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { postgresUrl, type TestDatabase } from '../../testing/databases.js';
import {
  captureLogger,
  describePostgres,
  freshPrefix,
  gate,
  openOutbox,
  rowsOf,
  shortSleep,
  waitFor,
} from './support.js';

/**
 * A TCP proxy in front of PostgreSQL that a test can cut and restore, so one Sequelize
 * loses its database while the server itself (shared with other suites) stays up.
 */
async function cuttableProxy(target: URL) {
  const sockets = new Set<Socket>();
  let down = false;
  const server: Server = createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = tcpConnect(Number(target.port || 5432), target.hostname);
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ]) {
      sockets.add(a);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    /** Drop every open connection, and refuse new ones until restored. */
    cut() {
      down = true;
      for (const s of sockets) s.destroy();
    },
    restore() {
      down = false;
    },
    async close() {
      down = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describePostgres('relay: surviving the database', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Order = event({ schema: z.object({ n: z.number() }) });

  /** An outbox on a PostgreSQL server that is not there: every claim it makes fails. */
  function unreachableOutbox() {
    const nowhere = new Sequelize('postgres://postgres@127.0.0.1:1/test', {
      logging: false,
      pool: { max: 1, acquire: 2_000 },
    });
    const config = defineOutbox({
      events: { 'shop.Order': Order },
      receivers: { 'shop.ship': receiver(Order, { handle: () => {} }) },
    });
    const logger = captureLogger();
    const outbox = createOutbox(config, { sequelize: nowhere, wakeup: null, logger });
    return { nowhere, logger, outbox };
  }

  it('the relay survives its database: a lost connection is logged, the claim backs off, and everything is delivered once it is back', async () => {
    const delivered = new Set<number>();
    const config = defineOutbox({
      events: { 'shop.Order': Order },
      receivers: {
        'shop.ship': receiver(Order, { handle: (e) => void delivered.add(e.payload.n) }),
      },
    });
    const tablePrefix = freshPrefix();
    // The application writes on its own connection, which the cut does not touch.
    const app = await openOutbox(db, config, { tablePrefix });
    const {
      proxy,
      outbox: relayOutbox,
      logger,
      close,
    } = await relayBehindProxy(config, tablePrefix);
    const waits: number[] = [];
    const stop = new AbortController();
    const running = relayOutbox.runRelay({
      signal: stop.signal,
      pollIntervalMs: 20,
      sleep: shortSleep(5, waits),
    });
    const claimFailures = () => logger.messages().filter((m) => m.startsWith('claim failed'));
    try {
      for (let n = 1; n <= 3; n++) await app.fire('shop.Order', { n });
      const allSucceeded = async () =>
        (await rowsOf(app, 'shop.ship')).every((r) => r.status === 'succeeded');
      // Committed, not merely handled: the cut must find the relay between batches.
      await waitFor(
        async () => delivered.size === 3 && (await allSucceeded()),
        'the first events to be delivered',
      );

      proxy.cut();
      for (let n = 4; n <= 6; n++) await app.fire('shop.Order', { n });
      await waitFor(() => claimFailures().length >= 5, 'the relay to fail five claims');
      expect(delivered.size).toBe(3);

      proxy.restore();
      await waitFor(() => delivered.size === 6, 'every event to be delivered after the outage');
    } finally {
      stop.abort();
      await running.catch(() => {});
      await close();
    }

    // Logged, and backed off: the waits after failed claims double from the poll interval.
    expect(claimFailures().slice(0, 4)).toEqual([
      'claim failed; retrying in 20 ms',
      'claim failed; retrying in 40 ms',
      'claim failed; retrying in 80 ms',
      'claim failed; retrying in 160 ms',
    ]);
    expect(waits).toEqual(expect.arrayContaining([20, 40, 80, 160, 320]));
    expect([...delivered].sort()).toEqual([1, 2, 3, 4, 5, 6]);
    expect((await rowsOf(app, 'shop.ship')).map((r) => [r.status, r.attempts])).toEqual(
      Array.from({ length: 6 }, () => ['succeeded', 1]),
    );
  });

  it('outcomes the database refused while it was away are recorded once it is back', async () => {
    const { sent, proceed, config } = heldTransport();
    const tablePrefix = freshPrefix();
    const app = await openOutbox(db, config, { tablePrefix });
    const {
      proxy,
      outbox: relayOutbox,
      logger,
      close,
    } = await relayBehindProxy(config, tablePrefix);
    await app.fire('shop.Order', { n: 1 });
    const waits: number[] = [];
    try {
      const running = relayOutbox.runRelay({
        passes: 1,
        // The relay's sleep also paces the record's retries: the database returns during the first.
        sleep: async (ms) => {
          waits.push(ms);
          proxy.restore();
        },
      });
      await sent.promise;
      proxy.cut();
      proceed.open();
      const report = await running;
      expect(report.succeeded).toBe(1);
    } finally {
      await close();
    }
    expect(waits).toEqual([200]);
    expect(logger.messages('error')).toEqual([]);
    expect((await rowsOf(app, 'shop.bus'))[0]).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  /**
   * A transport that signals `sent` when it starts and finishes when `proceed` opens: it
   * sends outside the database, so the send itself survives a cut.
   */
  function heldTransport() {
    const sent = gate();
    const proceed = gate();
    const config = defineOutbox({
      events: { 'shop.Order': Order },
      receivers: {
        'shop.bus': receiver(Order, {
          deliver: async () => {
            sent.open();
            await proceed.promise;
          },
        }),
      },
    });
    return { sent, proceed, config };
  }

  /** A Sequelize through a proxy the test can cut, and the outbox of a relay on it. */
  async function relayBehindProxy(config: ReturnType<typeof defineOutbox>, tablePrefix: string) {
    const proxy = await cuttableProxy(new URL(postgresUrl()));
    const url = new URL(postgresUrl());
    url.host = `127.0.0.1:${proxy.port}`;
    const sequelize = new Sequelize(url.toString(), {
      logging: false,
      pool: { max: 3, acquire: 5_000 },
    });
    const logger = captureLogger();
    const outbox = await openOutbox(db, config, {
      tablePrefix,
      sequelize,
      schema: db.outboxOptions.schema,
      logger,
    });
    return {
      proxy,
      outbox,
      logger,
      async close() {
        await sequelize.close().catch(() => {});
        await proxy.close();
      },
    };
  }

  it('an outage longer than five record tries does not leave the batch claimed: the record is retried while the lease holds', async () => {
    const { sent, proceed, config } = heldTransport();
    const tablePrefix = freshPrefix();
    const app = await openOutbox(db, config, { tablePrefix });
    const relay = await relayBehindProxy(config, tablePrefix);
    await app.fire('shop.Order', { n: 1 });
    const waits: number[] = [];
    try {
      const running = relay.outbox.runRelay({
        passes: 1,
        // The database stays away for eight tries of the record, then returns.
        sleep: async (ms) => {
          waits.push(ms);
          if (waits.length === 8) relay.proxy.restore();
        },
      });
      await sent.promise;
      relay.proxy.cut();
      proceed.open();
      const report = await running;
      expect(report.succeeded).toBe(1);
    } finally {
      await relay.close();
    }
    // Backed off from 200 ms, doubling to at most 2 s, past the old limit of five tries (the
    // try right after the return may still meet a connection the cut broke).
    expect(waits.slice(0, 8)).toEqual([200, 400, 800, 1_600, 2_000, 2_000, 2_000, 2_000]);
    expect(waits.length).toBeLessThanOrEqual(10);
    expect((await rowsOf(app, 'shop.bus'))[0]).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  it('a connection lost under a handler is a database fault, not a receiver failure: the row is handed back with no attempt spent', async () => {
    const tablePrefix = freshPrefix();
    let relay!: Awaited<ReturnType<typeof relayBehindProxy>>;
    const ran: number[] = [];
    const config = defineOutbox({
      events: { 'shop.Order': Order },
      receivers: {
        // One attempt only: an outage that charged it would dead-letter a good event.
        'shop.ship': receiver(Order, {
          maxAttempts: 1,
          handle: async (e, ctx) => {
            ran.push(e.payload.n);
            if (ran.length === 1) relay.proxy.cut(); // the database goes away mid-handler
            await runtimeOf(relay.outbox).sequelize.query('SELECT 1', {
              transaction: ctx.transaction,
            });
          },
        }),
      },
    });
    const app = await openOutbox(db, config, { tablePrefix });
    relay = await relayBehindProxy(config, tablePrefix);
    await app.fire('shop.Order', { n: 1 });
    // Sequelize's Transaction#rollback console.warns when its ROLLBACK fails; the relay's
    // own handler transaction (PostgreSQL) rolls back on its connection and says it once,
    // through the outbox's logger.
    const warned = vi.spyOn(console, 'warn');
    try {
      const first = await relay.outbox.runRelay({
        passes: 1,
        sleep: async () => relay.proxy.restore(),
      });
      expect((await rowsOf(app, 'shop.ship'))[0].lastError).toBeNull();
      expect(first).toMatchObject({ succeeded: 0, failed: 0, dead: 0, handedBack: 1 });
      expect((await rowsOf(app, 'shop.ship'))[0]).toMatchObject({
        status: 'pending',
        attempts: 0,
        lastError: null,
      });
      const second = await relay.outbox.runRelay({ passes: 1, sleep: shortSleep() });
      expect(second.succeeded).toBe(1);
    } finally {
      await relay.close();
    }
    expect(ran).toEqual([1, 1]);
    expect((await rowsOf(app, 'shop.ship'))[0]).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(relay.logger.messages('warn')).toContainEqual(
      expect.stringMatching(/met a database fault or a stop, not a receiver failure; handed back/),
    );
    expect(warned.mock.calls.map((c) => String(c[0]))).not.toContainEqual(
      expect.stringMatching(/Rolling back transaction/),
    );
    warned.mockRestore();
  });

  it('the wait after failed claims doubles from the poll interval up to 15 seconds', async () => {
    // A relay whose every claim fails: an outbox on a server that is not there.
    const { nowhere, logger, outbox } = unreachableOutbox();
    const waits: number[] = [];
    try {
      const report = await outbox.runRelay({
        passes: 12,
        pollIntervalMs: 1_000,
        sleep: shortSleep(0, waits),
      });
      expect(report.succeeded).toBe(0);
    } finally {
      await nowhere.close().catch(() => {});
    }
    expect(waits).toEqual([
      1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000, 15_000, 15_000, 15_000, 15_000, 15_000,
    ]);
    expect(logger.entries.every((e) => e.level === 'warn')).toBe(true);
  });

  it('a relay backing off after failed claims stops as soon as it is asked', async () => {
    const { nowhere, logger, outbox } = unreachableOutbox();
    const stop = new AbortController();
    try {
      // The real, abortable sleep, backing off from a poll interval of a minute.
      const running = outbox.runRelay({ signal: stop.signal, pollIntervalMs: 60_000 });
      await waitFor(() => logger.messages().length > 0, 'a failed claim');
      const asked = Date.now();
      stop.abort();
      await running;
      expect(Date.now() - asked).toBeLessThan(1_000);
    } finally {
      await nowhere.close().catch(() => {});
    }
    expect(logger.messages()).toEqual(['claim failed; retrying in 60000 ms']);
  });
});
