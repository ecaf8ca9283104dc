/**
 * Issue 9: a replay and a requeue wake the relays once they commit, naming the events'
 * topics, as `fire()` does — so a relay idle on a long poll delivers at once.
 */
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
import { drainOutbox } from '../../testing/drain.js';
import { freshPrefix, openOutbox, waitFor } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

/** A poll interval no test waits out: a delivery that comes fast came from a wakeup. */
const LONG_POLL_MS = 60_000;

/** A wakeup that records the signals sent through it (and passes them to its listeners). */
function recordingWakeup(): OutboxWakeup & { readonly signals: (readonly string[])[] } {
  const inner = inProcessWakeup();
  const signals: (readonly string[])[] = [];
  return {
    name: 'recording',
    capabilities: {},
    signals,
    signal(topics) {
      signals.push([...topics].sort());
      inner.signal(topics);
    },
    listen: (onSignal, context) => inner.listen(onSignal, context),
    close: () => inner.close(),
  };
}

describeEachDialect('replay and requeue wake the relays', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Sold = event({ schema: z.object({ n: z.number() }) });
  const Shipped = event({ schema: z.object({ n: z.number() }) });

  /** One receiver per topic, failing while `failing.on` (one attempt: a failure is dead). */
  function setup() {
    const delivered: { topic: string; n: number }[] = [];
    const failing = { on: false };
    const handle = (topic: string) => (e: { payload: { n: number } }) => {
      if (failing.on) throw new Error(`${topic} ${e.payload.n} refused`);
      delivered.push({ topic, n: e.payload.n });
    };
    const config = defineOutbox({
      events: { 'shop.sold': Sold, 'shop.shipped': Shipped },
      receivers: {
        'shop.books': receiver(Sold, { handle: handle('shop.sold'), maxAttempts: 1 }),
        'shop.post': receiver(Shipped, { handle: handle('shop.shipped'), maxAttempts: 1 }),
      },
    });
    return { config, delivered, failing };
  }

  /** A relay on a long poll, its idle waits counted; resolved once it first went idle. */
  async function idleRelay(outbox: Outbox) {
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
      stop: async () => {
        stop.abort();
        await running;
      },
    };
  }

  it('requeueDead signals once per chunk after it commits, naming the rows’ topics', async () => {
    const { config, failing } = setup();
    const wakeup = recordingWakeup();
    const outbox = await openOutbox(db, config, { wakeup });
    try {
      failing.on = true;
      await outbox.fire('shop.sold', { n: 1 });
      await outbox.fire('shop.shipped', { n: 2 });
      await drainOutbox(outbox);
      wakeup.signals.length = 0; // the fires' own signals
      expect(await outbox.requeueDead({ receiverKey: 'shop.books' })).toBe(1);
      expect(wakeup.signals).toEqual([['shop.sold']]);
      expect(await outbox.requeueDead()).toBe(1);
      expect(wakeup.signals).toEqual([['shop.sold'], ['shop.shipped']]);
      // Nothing requeued: nothing to wake anyone for.
      expect(await outbox.requeueDead()).toBe(0);
      expect(wakeup.signals).toHaveLength(2);
    } finally {
      await outbox.close();
    }
  });

  it('requeueDead({ dryRun }) counts the dead rows in scope, at most limit, and requeues nothing', async () => {
    const { config, failing } = setup();
    const wakeup = recordingWakeup();
    const outbox = await openOutbox(db, config, { wakeup });
    try {
      failing.on = true;
      await outbox.fireMany([
        { name: 'shop.sold', payload: { n: 1 } },
        { name: 'shop.sold', payload: { n: 2 } },
        { name: 'shop.shipped', payload: { n: 3 } },
      ]);
      await drainOutbox(outbox);
      wakeup.signals.length = 0;
      expect(await outbox.requeueDead({ dryRun: true })).toBe(3);
      expect(await outbox.requeueDead({ dryRun: true, limit: 2 })).toBe(2);
      expect(await outbox.requeueDead({ dryRun: true, topics: ['shop.sh*'] })).toBe(1);
      expect(await outbox.requeueDead({ dryRun: true, receiverKey: 'shop.books' })).toBe(2);
      expect(await outbox.requeueDead({ dryRun: true, topics: [] })).toBe(0);
      expect(await outbox.countDeliveries()).toMatchObject({ dead: 3 });
      expect(wakeup.signals).toEqual([]);
    } finally {
      await outbox.close();
    }
  });

  it('replayEvents signals after the caller’s transaction commits, and not for a rollback', async () => {
    const { config } = setup();
    const wakeup = recordingWakeup();
    const outbox = await openOutbox(db, config, { wakeup });
    try {
      const [sold, shipped] = await outbox.fireMany([
        { name: 'shop.sold', payload: { n: 1 } },
        { name: 'shop.shipped', payload: { n: 2 } },
      ]);
      await drainOutbox(outbox);
      wakeup.signals.length = 0;

      await db.sequelize
        .transaction(async (transaction) => {
          await outbox.replayEvents([sold.id, shipped.id], { transaction });
          // Inside the transaction: not yet.
          expect(wakeup.signals).toEqual([]);
          throw new Error('the business change failed');
        })
        .catch(() => {});
      expect(wakeup.signals).toEqual([]);

      await db.sequelize.transaction(async (transaction) => {
        expect(await outbox.replayEvents([sold.id, shipped.id], { transaction })).toMatchObject({
          reopened: 2,
        });
        expect(wakeup.signals).toEqual([]);
      });
      expect(wakeup.signals).toEqual([['shop.shipped', 'shop.sold']]);

      // Still owed (pending): a replay changes nothing and signals nothing.
      expect(await outbox.replayEvents([sold.id])).toMatchObject({ reopened: 0, added: 0 });
      expect(wakeup.signals).toHaveLength(1);
    } finally {
      await outbox.close();
    }
  });

  it('a relay idle on a long poll delivers a requeued dead letter at once', async () => {
    const { config, delivered, failing } = setup();
    const outbox = await openOutbox(db, config, { wakeup: inProcessWakeup() });
    failing.on = true;
    await outbox.fire('shop.sold', { n: 1 });
    await drainOutbox(outbox);
    expect(await outbox.countDeliveries()).toMatchObject({ dead: 1 });
    failing.on = false;
    const relay = await idleRelay(outbox);
    try {
      const waits = relay.idle.waits;
      expect(await outbox.requeueDead()).toBe(1);
      await waitFor(() => delivered.length === 1, 'the woken relay to deliver', 5_000);
      expect(delivered).toEqual([{ topic: 'shop.sold', n: 1 }]);
      // Woken out of its first wait (a minute long), not at its end: idle again in a next one.
      await waitFor(() => relay.idle.waits > waits, 'the relay to go idle again', 5_000);
    } finally {
      await relay.stop();
      await outbox.close();
    }
  });

  it('a relay idle on a long poll delivers a replayed event at once', async () => {
    const { config, delivered } = setup();
    const outbox = await openOutbox(db, config, { wakeup: inProcessWakeup() });
    const fired = await outbox.fire('shop.shipped', { n: 7 });
    await drainOutbox(outbox);
    expect(delivered).toHaveLength(1);
    const relay = await idleRelay(outbox);
    try {
      expect(await outbox.replayEvents([fired.id])).toMatchObject({ reopened: 1 });
      await waitFor(() => delivered.length === 2, 'the woken relay to deliver', 5_000);
      expect(delivered[1]).toEqual({ topic: 'shop.shipped', n: 7 });
    } finally {
      await relay.stop();
      await outbox.close();
    }
  });

  if (dialect.name === 'postgres') {
    it('LISTEN/NOTIFY: the operation NOTIFYs in its transaction, waking a relay of another outbox instance', async () => {
      const channel = `obk_${randomBytes(5).toString('hex')}`;
      const { config, delivered, failing } = setup();
      // The relay's instance, and an operator's (as `outbox requeue-dead` makes it), on
      // the same tables and channel: only the NOTIFY can reach the relay.
      const tablePrefix = freshPrefix();
      const relayOutbox = await openOutbox(db, config, {
        wakeup: listenNotifyWakeup({ channel }),
        tablePrefix,
      });
      const operator = await openOutbox(db, config, {
        wakeup: listenNotifyWakeup({ channel }),
        tablePrefix,
      });
      const signals: (readonly string[])[] = [];
      const watcher = listenNotifyWakeup({ channel });
      const url = new URL(postgresUrl());
      const unlisten = await watcher.listen((topics) => void signals.push(topics), {
        connection: {
          dialect: 'postgres',
          host: url.hostname,
          port: Number(url.port || 5432),
          user: decodeURIComponent(url.username),
          database: url.pathname.slice(1),
        },
      });
      failing.on = true;
      const fired = await operator.fire('shop.sold', { n: 1 });
      await drainOutbox(operator);
      failing.on = false;
      const relay = await idleRelay(relayOutbox);
      try {
        await new Promise((resolve) => setTimeout(resolve, 50));
        signals.length = 0; // the fire's own NOTIFY
        await db.sequelize
          .transaction(async (transaction) => {
            await operator.replayEvents([fired.id], { transaction });
            throw new Error('rolled back');
          })
          .catch(() => {});
        await new Promise((resolve) => setTimeout(resolve, 100));
        // The rolled-back replay sent nothing, and the relay is still in its first wait.
        expect({ signals, delivered, waits: relay.idle.waits }).toEqual({
          signals: [],
          delivered: [],
          waits: 1,
        });
        expect(await operator.requeueDead()).toBe(1);
        await waitFor(() => delivered.length === 1, 'the notified relay to deliver', 5_000);
        await waitFor(() => signals.length >= 1, 'the NOTIFY to be heard', 5_000);
        // One notification, the requeue's.
        expect(signals).toEqual([['shop.sold']]);
        expect(await operator.replayEvents([fired.id])).toMatchObject({ reopened: 1 });
        await waitFor(() => delivered.length === 2, 'the notified relay to deliver again', 5_000);
      } finally {
        await unlisten();
        await watcher.close();
        await relay.stop();
        await relayOutbox.close();
        await operator.close();
      }
    });
  }
});
