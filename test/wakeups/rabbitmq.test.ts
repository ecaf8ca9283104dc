import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  defineOutbox,
  event,
  type Outbox,
  rabbitmqWakeup,
  receiver,
} from '../../src/index.js';
import type { OutboxLogger } from '../../src/observe/logger.js';
import { silentLogger } from '../../src/observe/logger.js';
import { abortableSleep } from '../../src/relay/run-relay.js';
import { pollUntil, wakeupConformance } from '../../testing/conformance/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { fakeTime, openOutbox, waitFor } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  type BrokerAdmin,
  brokerAdmin,
  cuttableProxy,
  RABBITMQ_URL,
  uniqueName,
} from '../transports/rabbitmq-support.js';

let admin: BrokerAdmin;
beforeAll(async () => {
  admin = await brokerAdmin();
});
afterAll(() => admin.cleanup());

const context = { connection: { dialect: 'sqlite' } } as const;

function recordingLogger() {
  const lines: { level: 'warn' | 'error'; message: string }[] = [];
  const logger: OutboxLogger = {
    debug() {},
    info() {},
    warn: (message) => void lines.push({ level: 'warn', message }),
    error: (message) => void lines.push({ level: 'error', message }),
  };
  return { logger, lines };
}

/** A listener that keeps what it heard. */
function ear() {
  const heard: (readonly string[])[] = [];
  return { heard, onSignal: (topics: readonly string[]) => void heard.push([...topics]) };
}

wakeupConformance('rabbitmqWakeup', async () => {
  const exchange = uniqueName('wake');
  admin.forget(exchange);
  return { wakeup: rabbitmqWakeup({ url: RABBITMQ_URL, exchange, logger: silentLogger }), context };
});

describe('rabbitmqWakeup', () => {
  it('refuses a bad URL or exchange, never echoing the password', () => {
    expect(() =>
      rabbitmqWakeup({ url: 'redis://u:pw@localhost' }),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: rabbitmqWakeup({ url }) must be an amqp:// or amqps:// URL (got "redis://u:***@localhost")]`,
    );
    expect(() => rabbitmqWakeup({ url: RABBITMQ_URL, exchange: 'amq.fanout' })).toThrow(
      ConfigurationError,
    );
    expect(() => rabbitmqWakeup({ url: RABBITMQ_URL, exchange: '' })).toThrow(ConfigurationError);
  });

  it('declares no database needs: it serves any dialect and signals after commit', () => {
    expect(rabbitmqWakeup({ url: RABBITMQ_URL }).capabilities).toEqual({});
  });

  it('each relay consumes an exclusive auto-deleted queue of its own, gone once it stops listening', async () => {
    const exchange = uniqueName('wake');
    admin.forget(exchange);
    const a = rabbitmqWakeup({ url: RABBITMQ_URL, exchange, logger: silentLogger });
    const b = rabbitmqWakeup({ url: RABBITMQ_URL, exchange, logger: silentLogger });
    const ea = ear();
    const eb = ear();
    const offA = await a.listen(ea.onSignal, context);
    const offB = await b.listen(eb.onSignal, context);
    a.signal(['shop.OrderPlaced']);
    await pollUntil(
      () => eb.heard,
      (h) => h.length > 0,
      5_000,
    );
    await pollUntil(
      () => ea.heard,
      (h) => h.length > 0,
      5_000,
    );
    expect(ea.heard).toEqual([['shop.OrderPlaced']]);
    expect(eb.heard).toEqual([['shop.OrderPlaced']]);
    await offA();
    await offB();
    await a.close();
    await b.close();
  });

  it('reconnects with backoff after the proxy drops its connection, then signals its listeners with no topics', async () => {
    const exchange = uniqueName('wake');
    admin.forget(exchange);
    const proxy = await cuttableProxy();
    const time = fakeTime();
    const { logger, lines } = recordingLogger();
    const wakeup = rabbitmqWakeup({ url: proxy.url, exchange, logger, scheduler: time.scheduler });
    const sender = rabbitmqWakeup({ url: RABBITMQ_URL, exchange, logger: silentLogger });
    const e = ear();
    try {
      await wakeup.listen(e.onSignal, context);
      proxy.cut();
      await waitFor(() => time.pending() > 0, 'the reconnect to be scheduled');
      expect(lines.map((l) => l.message)).toEqual([
        expect.stringMatching(
          /lost its connection to amqp:\/\/guest:\*\*\*@127\.0\.0\.1:\d+.*; reconnecting/,
        ),
      ]);
      proxy.restore();
      await time.tick(500);
      await waitFor(() => e.heard.length > 0, 'the reconnected listener to be signalled');
      expect(e.heard).toEqual([[]]);
      sender.signal(['shop.OrderPlaced']);
      await waitFor(() => e.heard.length > 1, 'a signal after the reconnect');
      expect(e.heard).toEqual([[], ['shop.OrderPlaced']]);
      expect(lines.some((l) => l.message.includes('guest:guest'))).toBe(false);
    } finally {
      await wakeup.close();
      await sender.close();
      await proxy.close();
    }
  });

  it('gives up after five failures in a row with an ERROR, while listen() itself resolves (the relay polls on)', async () => {
    const exchange = uniqueName('wake');
    const proxy = await cuttableProxy();
    proxy.cut();
    const time = fakeTime();
    const { logger, lines } = recordingLogger();
    const wakeup = rabbitmqWakeup({ url: proxy.url, exchange, logger, scheduler: time.scheduler });
    try {
      const off = await wakeup.listen(() => {}, context);
      const delays: number[] = [];
      // Four retries after the first attempt: the fifth failure in a row gives up.
      for (let attempt = 1; attempt <= 4; attempt++) {
        await waitFor(() => time.pending() > 0, `retry ${attempt} to be scheduled`);
        const before = time.now().getTime();
        await time.tick(20_000);
        delays.push(time.now().getTime() - before);
        await waitFor(() => lines.length > attempt, `attempt ${attempt + 1} to fail`);
      }
      expect(lines.map((l) => l.level)).toEqual(['warn', 'warn', 'warn', 'warn', 'warn', 'error']);
      expect(lines.at(-1)!.message).toMatch(
        /failed 5 time\(s\) in a row; giving up \(maxFailures: 5\), relays keep polling$/,
      );
      expect(time.pending()).toBe(0);
      expect(proxy.accepted()).toBe(5);
      await off();
    } finally {
      await wakeup.close();
      await proxy.close();
    }
  });
});

describeEachDialect('rabbitmqWakeup with a relay', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Committed = event({ schema: z.object({ n: z.number() }) });
  const RolledBack = event({ schema: z.object({ n: z.number() }) });

  async function startRelay(outbox: Outbox) {
    const stop = new AbortController();
    const idle = { waits: 0 };
    const running = outbox.runRelay({
      signal: stop.signal,
      // A poll no test waits out: a delivery that comes fast came from the wakeup.
      pollIntervalMs: 60_000,
      sleep: (ms, signal) => {
        idle.waits += 1;
        return abortableSleep(ms, signal);
      },
    });
    await waitFor(() => idle.waits >= 1, 'the relay to go idle');
    return async () => {
      stop.abort();
      await running;
    };
  }

  it('a relay idle on a long poll wakes at once on a commit, and no signal is sent for a rollback', async () => {
    const exchange = uniqueName('wake');
    admin.forget(exchange);
    const delivered: { n: number; at: number }[] = [];
    const config = defineOutbox({
      events: { 'shop.Committed': Committed, 'shop.RolledBack': RolledBack },
      receivers: {
        'shop.note': receiver(Committed, {
          handle: (e) => void delivered.push({ n: e.payload.n, at: Date.now() }),
        }),
        'shop.never': receiver(RolledBack, { handle: () => {} }),
      },
    });
    const wakeup = rabbitmqWakeup({ url: RABBITMQ_URL, exchange, logger: silentLogger });
    // A second process's listener on the same exchange: what was signalled, seen from outside.
    const witness = rabbitmqWakeup({ url: RABBITMQ_URL, exchange, logger: silentLogger });
    const seen = ear();
    const offWitness = await witness.listen(seen.onSignal, context);
    const outbox = await openOutbox(db, config, { wakeup });
    const stop = await startRelay(outbox);
    try {
      await db.sequelize
        .transaction(async (transaction) => {
          await outbox.fire('shop.RolledBack', { n: 0 }, { transaction });
          throw new Error('roll it back');
        })
        .catch(() => {});
      const committedAt = Date.now();
      await outbox.fire('shop.Committed', { n: 1 });
      await waitFor(() => delivered.length === 1, 'the woken relay to deliver', 5_000);
      expect(delivered[0].at - committedAt).toBeLessThan(2_000);
      await waitFor(() => seen.heard.length > 0, 'the witness to hear the signal');
      // Signals travel in order on one channel: had the rollback signalled, it came first.
      expect(seen.heard).toEqual([['shop.Committed']]);
    } finally {
      await stop();
      await offWitness();
      await witness.close();
      await outbox.close();
    }
  });
});
