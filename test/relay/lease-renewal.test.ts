import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigurationError, defineOutbox, event, receiver } from '../../src/index.js';
import { RELAY_LOCK_SECONDS } from '../../src/relay/single-relay-lock.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  type FakeTime,
  fakeTime,
  freshPrefix,
  openOutbox,
  rowsOf,
  T0,
  tickUntil,
  waitFor,
} from './support.js';

/** The lease every claim stamps here, and how long each delivery takes: longer, in sum. */
const LEASE_SECONDS = 0.45;
const DELIVERY_MS = 350;
const EVENTS = 3;

describeEachDialect('relay: lease renewal', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Upload = event({ schema: z.object({ n: z.number() }) });

  /** A config whose transport takes `deliveryMs` of fake time per event and logs who sent what. */
  function slowConfig(sent: string[], who: string, time: FakeTime, deliveryMs = DELIVERY_MS) {
    return defineOutbox({
      events: { 'files.Upload': Upload },
      receivers: {
        'files.store': receiver(Upload, {
          deliver: async (e) => {
            sent.push(`${who}:${(e.payload as { n: number }).n}`);
            if (deliveryMs > 0) await time.scheduler.sleep(deliveryMs);
          },
          timeoutSeconds: 3_600,
        }),
      },
      settings: { leaseSeconds: LEASE_SECONDS },
    });
  }

  it('a batch that takes longer than its lease keeps its lease and is not claimed by another relay', async () => {
    const sent: string[] = [];
    const time = fakeTime();
    const tablePrefix = freshPrefix();
    const timing = { clock: time.now, scheduler: time.scheduler, tablePrefix };
    const first = await openOutbox(db, slowConfig(sent, 'first', time), timing);
    const second = await openOutbox(db, slowConfig(sent, 'second', time), {
      ...timing,
      sequelize: db.connectAgain(),
    });
    for (let n = 1; n <= EVENTS; n++) await first.fire('files.Upload', { n });

    const stopFirst = new AbortController();
    const stopSecond = new AbortController();
    const runFirst = first.runRelay({
      workerId: 'first',
      signal: stopFirst.signal,
      concurrency: 1,
    });
    await waitFor(() => sent.length === 1, 'the first relay to start its batch');
    // The second relay polls all the while the first works through its batch.
    const runSecond = second.runRelay({
      workerId: 'second',
      signal: stopSecond.signal,
      pollIntervalMs: 10,
      allowUnsafeConcurrency: dialect.name === 'sqlite',
    });
    try {
      await tickUntil(
        time,
        async () => (await rowsOf(first, 'files.store')).every((r) => r.status === 'succeeded'),
        'the batch to be delivered',
        25,
      );
    } finally {
      stopFirst.abort();
      stopSecond.abort();
    }
    await Promise.all([runFirst, runSecond]);

    // It took more than two leases of fake time, and still every event went once, from the first relay.
    expect(time.now().getTime() - T0.getTime()).toBeGreaterThan(2 * LEASE_SECONDS * 1000);
    expect(sent).toEqual(['first:1', 'first:2', 'first:3']);
    expect(
      (await rowsOf(first, 'files.store')).map((r) => [r.status, r.attempts, r.claimedBy]),
    ).toEqual([
      ['succeeded', 1, 'first'],
      ['succeeded', 1, 'first'],
      ['succeeded', 1, 'first'],
    ]);
  });

  if (dialect.name === 'sqlite') {
    it('a SQLite relay keeps its single-relay lock through a batch longer than the lock lease', async () => {
      const sent: string[] = [];
      const time = fakeTime();
      const tablePrefix = freshPrefix();
      const timing = { clock: time.now, scheduler: time.scheduler, tablePrefix };
      // Each delivery takes 8 s of fake time: the batch outlasts the 15 s lock lease.
      const first = await openOutbox(db, slowConfig(sent, 'first', time, 8_000), timing);
      const second = await openOutbox(db, slowConfig(sent, 'second', time, 8_000), {
        ...timing,
        sequelize: db.connectAgain(),
      });
      for (let n = 1; n <= EVENTS; n++) await first.fire('files.Upload', { n });
      const stop = new AbortController();
      let ended = false;
      const running = first.runRelay({ workerId: 'first', signal: stop.signal }).finally(() => {
        ended = true;
      });
      try {
        // Mid-batch, well past the lock lease from the start.
        await tickUntil(time, () => sent.length === 3, 'the third delivery to start', 500);
        expect(time.now().getTime() - T0.getTime()).toBeGreaterThan(RELAY_LOCK_SECONDS * 1000);
        const refused = second.runRelay({ workerId: 'second', passes: 1 });
        await expect(refused).rejects.toBeInstanceOf(ConfigurationError);
      } finally {
        stop.abort();
      }
      await tickUntil(time, () => ended, 'the relay to finish the delivery in hand', 500);
      const report = await running;
      expect(report.succeeded).toBe(EVENTS);
      expect(sent).toEqual(['first:1', 'first:2', 'first:3']);
    });

    it('after a relay is killed, a new one is refused with when the lock lapses, and starts once it has', async () => {
      const sent: string[] = [];
      const time = fakeTime();
      const outbox = await openOutbox(db, slowConfig(sent, 'next', time, 0), {
        clock: time.now,
        scheduler: time.scheduler,
      });
      // A relay that took the lock and was killed with -9: it never gives it back.
      const lock = runtimeOf(outbox).store.relayLock!;
      expect(
        await lock.acquire(
          'killed-relay',
          time.now(),
          new Date(time.now().getTime() + RELAY_LOCK_SECONDS * 1000),
        ),
      ).toBe(true);
      await outbox.fire('files.Upload', { n: 1 });

      const refused = await outbox.runRelay({ passes: 1 }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ConfigurationError);
      expect((refused as Error).message).toContain(
        `(killed-relay) until ${new Date(time.now().getTime() + 15_000).toISOString()}, 15 s from now`,
      );
      expect((refused as Error).message).toContain('--allow-unsafe-concurrency');

      time.advance(RELAY_LOCK_SECONDS * 1000);
      const report = await outbox.runRelay({ passes: 1 });
      expect(report.succeeded).toBe(1);
      expect(sent).toEqual(['next:1']);
    });
  }
});
