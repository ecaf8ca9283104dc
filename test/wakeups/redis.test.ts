import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineOutbox,
  event,
  type Outbox,
  type OutboxLogger,
  receiver,
  redisWakeup,
  silentLogger,
} from '../../src/index.js';
import { abortableSleep } from '../../src/relay/run-relay.js';
import { pollUntil, wakeupConformance } from '../../testing/conformance/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox, waitFor } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import { REDIS_URL, redisProxy, testRedis, uniqueRedisName } from '../support/redis.js';

/** What the relay passes to listen(); the Redis wakeup needs nothing of the database. */
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

let redis: Redis;
beforeAll(() => {
  redis = testRedis();
});
afterAll(async () => {
  await redis.quit();
});

describe('redisWakeup: options', () => {
  it('refuses options it cannot work with, before anything connects', () => {
    expect(() => redisWakeup({})).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: redisWakeup() takes a url or a client, exactly one (got neither)]`,
    );
    expect(() => redisWakeup({ url: 'localhost:6379' })).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: redisWakeup({ url }) must be a redis:// or rediss:// URL (got localhost:6379)]`,
    );
    expect(() => redisWakeup({ url: REDIS_URL, channel: '' })).toThrow(/channel/);
    expect(() =>
      redisWakeup({ url: REDIS_URL, maxFailures: 0 }),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: redisWakeup({ maxFailures }) must be an integer ≥ 1 (got 0)]`,
    );
  });

  it('needs nothing of the database: any dialect, the signal sent after commit', () => {
    expect(redisWakeup({ url: REDIS_URL }).capabilities).toEqual({});
  });
});

wakeupConformance('redisWakeup({ url })', async ({ runId }) => ({
  wakeup: redisWakeup({ url: REDIS_URL, channel: `obk:wake:${runId}`, logger: silentLogger }),
  context,
}));

wakeupConformance('redisWakeup({ client })', async ({ runId }) => {
  const client = testRedis();
  return {
    wakeup: redisWakeup({ client, channel: `obk:wake:${runId}`, logger: silentLogger }),
    context,
    async cleanup() {
      // The client given is the caller's: close() left it open.
      expect(await client.ping()).toBe('PONG');
      await client.quit();
    },
  };
});

describe('redisWakeup: the subscription', () => {
  it('publishes one message per signal: the JSON list of its topics', async () => {
    const channel = uniqueRedisName('obk-wake');
    const spy = redis.duplicate();
    const messages: string[] = [];
    spy.on('message', (_: string, m: string) => void messages.push(m));
    await spy.subscribe(channel);
    const wakeup = redisWakeup({ client: redis, channel });
    wakeup.signal(['shop.OrderPlaced', 'shop.OrderShipped']);
    expect(
      await pollUntil(
        () => messages,
        (m) => m.length > 0,
        5_000,
      ),
    ).toEqual(['["shop.OrderPlaced","shop.OrderShipped"]']);
    await wakeup.close();
    spy.disconnect();
  });

  it('a message that is not its JSON list still wakes the listeners, naming no topic', async () => {
    const channel = uniqueRedisName('obk-wake');
    const wakeup = redisWakeup({ url: REDIS_URL, channel, logger: silentLogger });
    const heard: (readonly string[])[] = [];
    const off = await wakeup.listen((t) => void heard.push(t), context);
    await redis.publish(channel, 'go');
    expect(
      await pollUntil(
        () => heard,
        (h) => h.length > 0,
        5_000,
      ),
    ).toEqual([[]]);
    await off();
    await wakeup.close();
  });

  it('subscribes again after the connection is dropped, and then signals its listeners, since a signal may have been missed', async () => {
    const proxy = await redisProxy();
    const { logger, lines } = recordingLogger();
    const channel = uniqueRedisName('obk-wake');
    const wakeup = redisWakeup({ url: proxy.url, channel, logger, reconnectBaseMs: 10 });
    const heard: (readonly string[])[] = [];
    try {
      await wakeup.listen((t) => void heard.push(t), context);
      proxy.cut();
      await waitFor(
        () => lines.some((l) => l.message.includes('was lost')),
        'the wakeup to notice the lost connection',
      );
      proxy.restore();
      // Back after the first backoff step: one signal naming no topic.
      expect(
        await pollUntil(
          () => heard,
          (h) => h.length > 0,
          5_000,
        ),
      ).toEqual([[]]);
      // And subscribed for real: a signal published on the server reaches it.
      await redis.publish(channel, JSON.stringify(['shop.OrderPlaced']));
      expect(
        await pollUntil(
          () => heard,
          (h) => h.length > 1,
          5_000,
        ),
      ).toEqual([[], ['shop.OrderPlaced']]);
      expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    } finally {
      await wakeup.close();
      await proxy.close();
    }
  });

  it('gives up after five failed subscriptions in a row with an ERROR, while listen() resolves and the relay polls on', async () => {
    const proxy = await redisProxy();
    proxy.cut();
    const { logger, lines } = recordingLogger();
    const wakeup = redisWakeup({
      url: proxy.url,
      channel: uniqueRedisName('obk-wake'),
      logger,
      reconnectBaseMs: 1,
    });
    try {
      const off = await wakeup.listen(() => {}, context);
      await waitFor(() => lines.some((l) => l.level === 'error'), 'the wakeup to give up');
      expect(lines.map((l) => l.level)).toEqual(['warn', 'warn', 'warn', 'warn', 'warn', 'error']);
      expect(lines.at(-1)?.message.replace(/"obk-wake:\w+"/, '"…"')).toMatchInlineSnapshot(
        `"SUBSCRIBE to Redis channel "…" failed 5 time(s) in a row; giving up (maxFailures: 5), relays keep polling"`,
      );
      // Five attempts, and no timer left for a sixth.
      expect(proxy.connections()).toBe(5);
      await off();
    } finally {
      await wakeup.close();
      await proxy.close();
    }
  });
});

/** A poll interval no test waits out: a delivery that comes fast came from a wakeup. */
const LONG_POLL_MS = 60_000;

describeEachDialect('redisWakeup wakes relays', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Ping = event({ schema: z.object({ n: z.number() }) });

  /** Start a relay and wait until it is idle in its (long) poll wait. */
  async function startRelay(outbox: Outbox) {
    const stop = new AbortController();
    const idle = { waits: 0 };
    const running = outbox.runRelay({
      signal: stop.signal,
      pollIntervalMs: LONG_POLL_MS,
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

  it('a relay idle on a long poll wakes at once on a commit, and not for a rollback', async () => {
    const delivered: { n: number; at: number }[] = [];
    const config = defineOutbox({
      events: { 'net.Ping': Ping },
      receivers: {
        'net.echo': receiver(Ping, {
          handle: (e) => void delivered.push({ n: e.payload.n, at: Date.now() }),
        }),
      },
    });
    const wakeup = redisWakeup({ url: REDIS_URL, channel: uniqueRedisName('obk-wake') });
    const outbox = await openOutbox(db, config, { wakeup });
    // A second listener on the same wakeup, to see the signals themselves.
    const signals: (readonly string[])[] = [];
    const unlisten = await wakeup.listen((topics) => void signals.push(topics), context);
    const relay = await startRelay(outbox);
    try {
      await db.sequelize
        .transaction(async (transaction) => {
          await outbox.fire('net.Ping', { n: 1 }, { transaction });
          throw new Error('the business change failed');
        })
        .catch(() => {});

      const committedAt = Date.now();
      await db.sequelize.transaction(async (transaction) => {
        await outbox.fire('net.Ping', { n: 2 }, { transaction });
        await outbox.fire('net.Ping', { n: 3 }, { transaction });
      });
      await waitFor(() => delivered.length === 2, 'the woken relay to deliver', 5_000);
      expect(Date.now() - committedAt).toBeLessThan(2_000);
      expect(delivered.map((d) => d.n).sort()).toEqual([2, 3]);
      // The rollback sent nothing; the commit one message for its transaction. Signals
      // arrive in the order they were published, so the commit's being first proves it.
      expect(signals).toEqual([['net.Ping']]);
    } finally {
      await unlisten();
      await relay.stop();
      await outbox.close();
    }
  });
});
