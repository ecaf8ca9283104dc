import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../src/index.js';
import type { OutboxLogger } from '../../src/observe/logger.js';
import {
  checkMaxFailures,
  reconnectingSubscription,
  type SubscriptionEvents,
} from '../../src/wakeups/reconnecting-subscription.js';
import { fakeTime, waitFor } from '../relay/support.js';

/*
 * The shared reconnect loop on its own: a subscription of the test's making (which fails,
 * holds or breaks when told), the backoff's timers faked, so the curve, the count and the
 * give-up are asserted exactly. The wakeups' own tests run it against their real servers.
 */

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

/** A subscription that fails while `down`, and whose live links the test can break. */
function fakeServer() {
  let down = false;
  const live: { id: number; events: SubscriptionEvents; closed: boolean }[] = [];
  let attempts = 0;
  return {
    attempts: () => attempts,
    live: () => live.filter((l) => !l.closed),
    setDown: (d: boolean) => {
      down = d;
    },
    async connect(events: SubscriptionEvents) {
      attempts += 1;
      if (down) throw new Error(`refused (attempt ${attempts})`);
      const link = { id: attempts, events, closed: false };
      live.push(link);
      return link;
    },
    async disconnect(link: { closed: boolean }) {
      link.closed = true;
    },
    /** Break every live link, as a dropped connection would. */
    breakAll() {
      for (const l of live.filter((x) => !x.closed)) {
        l.closed = true;
        l.events.lost(new Error('connection reset'));
      }
    },
  };
}

function setup(maxFailures?: number) {
  const time = fakeTime();
  const server = fakeServer();
  const { logger, lines } = recordingLogger();
  const subscription = reconnectingSubscription({
    what: 'SUBSCRIBE to test',
    failedWarning: 'could not subscribe; retrying',
    lostWarning: 'subscription lost; reconnecting',
    logger: () => logger,
    maxFailures,
    scheduler: time.scheduler,
    connect: (events) => server.connect(events),
    disconnect: (link) => server.disconnect(link),
  });
  return { time, server, lines, subscription };
}

/** Let the fake timer's callback reach the connect it starts. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('reconnectingSubscription (the one reconnect loop of every wakeup)', () => {
  it('opens on the first listener, hands signals to every listener, and gives the subscription back when the last leaves', async () => {
    const { server, subscription } = setup();
    const a: (readonly string[])[] = [];
    const b: (readonly string[])[] = [];
    const offA = await subscription.listen((t) => void a.push(t));
    const offB = await subscription.listen((t) => void b.push(t));
    expect(server.attempts()).toBe(1);
    server.live()[0].events.signal(['shop.OrderPlaced']);
    expect(a).toEqual([['shop.OrderPlaced']]);
    expect(b).toEqual([['shop.OrderPlaced']]);
    await offA();
    expect(server.live()).toHaveLength(1);
    await offB();
    expect(server.live()).toHaveLength(0);
    // A later listener opens a new one.
    await subscription.listen(() => {});
    expect(server.attempts()).toBe(2);
    await subscription.close();
    expect(server.live()).toHaveLength(0);
  });

  it('backs off 500 ms after the first failure, doubling, and gives up on the fifth failure in a row with an ERROR', async () => {
    const { time, server, lines, subscription } = setup();
    server.setDown(true);
    // listen() resolves: the relay polls on while the wakeup retries by itself.
    const off = await subscription.listen(() => {});
    while (time.pending() > 0) {
      const attempts = server.attempts();
      await time.tick(60_000);
      await waitFor(() => server.attempts() > attempts, 'the retry to run');
      await settle();
    }
    expect(server.attempts()).toBe(5);
    expect(lines.map((l) => l.level)).toEqual(['warn', 'warn', 'warn', 'warn', 'warn', 'error']);
    expect(lines.at(-1)?.message).toMatchInlineSnapshot(
      `"SUBSCRIBE to test failed 5 time(s) in a row; giving up (maxFailures: 5), relays keep polling"`,
    );
    expect(subscription.failures).toBe(5);
    expect(time.pending()).toBe(0);
    await off();
  });

  it('waits 500, 1000, 2000, 4000 … capped at 15 s between attempts', async () => {
    const { time, server, subscription } = setup(10);
    server.setDown(true);
    await subscription.listen(() => {});
    const gaps: number[] = [];
    for (let i = 0; i < 8; i++) {
      const attempts = server.attempts();
      let waited = 0;
      while (server.attempts() === attempts) {
        await time.tick(250);
        waited += 250;
        await settle();
      }
      gaps.push(waited);
    }
    expect(gaps).toEqual([500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000]);
    await subscription.close();
    expect(time.pending()).toBe(0);
  });

  it('a subscription that holds resets the count: failures must be in a row', async () => {
    const { time, server, lines, subscription } = setup(3);
    server.setDown(true);
    await subscription.listen(() => {});
    await time.tick(500);
    await settle();
    expect(subscription.failures).toBe(2);
    server.setDown(false);
    await time.tick(1_000);
    await settle();
    expect(subscription.failures).toBe(0);
    expect(server.live()).toHaveLength(1);
    // Two more failures after it held: still under three in a row.
    server.setDown(true);
    server.breakAll();
    await time.tick(500);
    await settle();
    expect(subscription.failures).toBe(2);
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    await subscription.close();
  });

  it('once a subscription holds again after a failure, every listener is signalled with no topics', async () => {
    const { time, server, lines, subscription } = setup();
    const heard: (readonly string[])[] = [];
    await subscription.listen((t) => void heard.push(t));
    expect(heard).toEqual([]);
    server.breakAll();
    expect(lines.map((l) => l.message)).toEqual(['subscription lost; reconnecting']);
    expect(time.pending()).toBe(1);
    await time.tick(500);
    await settle();
    expect(server.live()).toHaveLength(1);
    expect(heard).toEqual([[]]);
    // A signal of a broken link is not handed on.
    server.live()[0].events.signal(['a']);
    expect(heard).toEqual([[], ['a']]);
    await subscription.close();
  });

  it('a listener that throws does not keep the signal from the others', async () => {
    const { server, lines, subscription } = setup();
    const heard: (readonly string[])[] = [];
    await subscription.listen(() => {
      throw new Error('boom');
    });
    await subscription.listen((t) => void heard.push(t));
    server.live()[0].events.signal(['x']);
    expect(heard).toEqual([['x']]);
    expect(lines.map((l) => l.level)).toEqual(['warn']);
    await subscription.close();
  });

  it('a ConfigurationError from connect rejects listen() and is not retried', async () => {
    const time = fakeTime();
    const subscription = reconnectingSubscription({
      what: 'x',
      failedWarning: 'x',
      lostWarning: 'x',
      logger: () => recordingLogger().logger,
      scheduler: time.scheduler,
      connect: async () => {
        throw new ConfigurationError('needs the kafkajs package');
      },
      disconnect: async () => {},
    });
    await expect(subscription.listen(() => {})).rejects.toThrow(/needs the kafkajs package/);
    expect(time.pending()).toBe(0);
  });

  it('close() stops the backoff: no attempt after it', async () => {
    const { time, server, subscription } = setup();
    server.setDown(true);
    await subscription.listen(() => {});
    expect(time.pending()).toBe(1);
    await subscription.close();
    expect(time.pending()).toBe(0);
    await time.tick(60_000);
    expect(server.attempts()).toBe(1);
  });

  it('maxFailures must be an integer ≥ 1, named for the wakeup', () => {
    expect(checkMaxFailures('kafkaWakeup', undefined)).toBe(5);
    expect(() => checkMaxFailures('kafkaWakeup', 0)).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: kafkaWakeup({ maxFailures }) must be an integer ≥ 1 (got 0)]`,
    );
  });
});
