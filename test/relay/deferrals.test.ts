import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type DeliveryFailure,
  defineOutbox,
  event,
  NotYet,
  type Outbox,
  RetryAfter,
  receiver,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { ClaimOptions } from '../../src/storage/store.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/drain.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  captureLogger,
  describeSplittingDialects,
  openOutbox,
  rowsOf,
  T0,
  type TestClock,
  testClock,
} from './support.js';

/** What a handler saw: which receiver, which event, at which time of the test clock. */
interface Seen {
  readonly key: string;
  readonly n: number;
  readonly atS: number;
}

const Send = event({ schema: z.object({ n: z.number() }) });
const Placed = event({ schema: z.object({ n: z.number() }) });

/** Seconds since T0 on the test clock. */
const sinceT0 = (clock: TestClock) => (clock.now().getTime() - T0.getTime()) / 1000;

/**
 * A relay `sleep` that moves the test clock by what it was asked to wait, at once (an idle
 * pass is then a poll interval of test time), running `onIdle` first, if given.
 */
function clockSleep(clock: TestClock, onIdle?: (pass: number) => Promise<void>) {
  let idles = 0;
  return async (ms: number) => {
    idles += 1;
    await onIdle?.(idles);
    clock.advance(ms);
  };
}

/** Wrap the store's claim to keep the options of every claim sent (an observer, not a mock). */
function recordClaims(outbox: Outbox): ClaimOptions[] {
  const store = runtimeOf(outbox).store;
  const sent: ClaimOptions[] = [];
  const claim = store.claim.bind(store);
  store.claim = (o) => {
    sent.push(o);
    return claim(o);
  };
  return sent;
}

describe('RetryAfter, constructed', () => {
  it('a deferral asking for zero seconds is refused where it is constructed, naming the value', () => {
    expect(() => new RetryAfter(0, { counts: false })).toThrow(RangeError);
    expect(() => new RetryAfter(0, { counts: false })).toThrowErrorMatchingInlineSnapshot(
      `[RangeError: RetryAfter(seconds, { counts: false }) needs a wait above zero (got 0): a deferral that spends nothing and comes straight back would loop until giveUpAfter]`,
    );
    // A counting one may ask for zero: it spends an attempt, so it still ends.
    expect(new RetryAfter(0).seconds).toBe(0);
  });

  it('a negative delay is refused where it is constructed, counting or not, naming the value', () => {
    for (const make of [() => new RetryAfter(-5), () => new RetryAfter(-5, { counts: false })]) {
      expect(make).toThrow(TypeError);
      expect(make).toThrow('(got -5)');
    }
  });

  it('keeps the (seconds, message) form, and takes { counts, message }', () => {
    const plain = new RetryAfter(5, '429 Too Many Requests');
    expect([plain.seconds, plain.counts, plain.message]).toEqual([
      5,
      true,
      '429 Too Many Requests',
    ]);
    const deferral = new RetryAfter(30, { counts: false, message: 'quota' });
    expect([deferral.seconds, deferral.counts, deferral.message]).toEqual([30, false, 'quota']);
    expect(new RetryAfter(30, { counts: false }).message).toBe('retry after 30s');
  });
});

describeEachDialect('relay: deferrals (RetryAfter with counts: false)', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  /**
   * A mail receiver in lane `mail` that defers (RetryAfter(60, { counts: false })) on its
   * first call, and a shop receiver in the default lane; both log what they see.
   */
  function lanesConfig(clock: TestClock, options: { mailLane?: string } = {}) {
    const seen: Seen[] = [];
    let calls = 0;
    const config = defineOutbox({
      events: { 'mail.Send': Send, 'shop.Placed': Placed },
      receivers: {
        'mail.smtp': receiver(Send, {
          handle: (e) => {
            calls += 1;
            if (calls === 1) throw new RetryAfter(60, { counts: false, message: 'throttled' });
            seen.push({ key: 'mail.smtp', n: e.payload.n, atS: sinceT0(clock) });
          },
          lane: options.mailLane ?? 'mail',
          giveUpAfter: { hours: 1 },
        }),
        'shop.audit': receiver(Placed, {
          handle: (e) => void seen.push({ key: 'shop.audit', n: e.payload.n, atS: sinceT0(clock) }),
        }),
      },
    });
    return { config, seen };
  }

  /** One receiver deferring as `behave` says, with its failures recorded. */
  function deferring(
    behave: (attempt: number) => void,
    options: { giveUpAfter?: { minutes: number }; maxRetryAfterSeconds?: number } = {},
  ) {
    const failures: DeliveryFailure[] = [];
    const config = defineOutbox({
      events: { 'mail.Send': Send },
      receivers: {
        'mail.smtp': receiver(Send, {
          handle: (_e, ctx) => behave(ctx.attempt),
          maxAttempts: 3,
          onFailure: (f) => void failures.push(f),
          ...(options.giveUpAfter ? { giveUpAfter: options.giveUpAfter } : {}),
        }),
      },
      settings: { maxRetryAfterSeconds: options.maxRetryAfterSeconds ?? 3600 },
    });
    return { config, failures };
  }

  it('a deferral spends no attempt: the row is failed with its message, and onFailure is told the attempt it was given', async () => {
    const { config, failures } = deferring(
      () => {
        throw new RetryAfter(60, { counts: false, message: 'quota exhausted' });
      },
      { giveUpAfter: { minutes: 30 } },
    );
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0 });
    await outbox.fire('mail.Send', { n: 1 });
    for (let i = 0; i < 2; i++) {
      await outbox.runRelay({ passes: 1, sleep: clockSleep(clock) });
      clock.advance(60_000);
    }
    expect((await rowsOf(outbox, 'mail.smtp'))[0]).toMatchObject({
      status: 'failed',
      attempts: 0,
      lastError: 'RetryAfter: quota exhausted',
    });
    // Nothing was spent, so the second run was given attempt 1 again.
    expect(failures.map((f) => [f.attempt, f.status])).toEqual([
      [1, 'failed'],
      [1, 'failed'],
    ]);
  });

  it("a transport's retryAfter result with counts: false is a deferral too", async () => {
    const config = defineOutbox({
      events: { 'mail.Send': Send },
      receivers: {
        'mail.bulk': receiver(Send, {
          giveUpAfter: { hours: 1 },
          deliver: {
            deliverBatch: async (items) =>
              items.map(() => ({
                status: 'retryAfter' as const,
                seconds: 30,
                counts: false,
                error: new Error('quota'),
              })),
          },
        }),
      },
    });
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0 });
    await outbox.fireMany([
      { name: 'mail.Send', payload: { n: 1 } },
      { name: 'mail.Send', payload: { n: 2 } },
    ]);
    await outbox.runRelay({ passes: 1, sleep: clockSleep(clock) });
    const rows = await rowsOf(outbox, 'mail.bulk');
    expect(rows.map((r) => [r.status, r.attempts, r.lastError])).toEqual([
      ['failed', 0, 'RetryAfter: quota'],
      ['failed', 0, 'RetryAfter: quota'],
    ]);
    expect(rows[0].availableAt).toEqual(new Date(T0.getTime() + 30_000));
  });

  it('the next attempt of a deferral runs between seconds and twice that from now', async () => {
    const availableAt: number[] = [];
    for (const jitter of [0, 0.999]) {
      const { config } = deferring(
        () => {
          throw new RetryAfter(60, { counts: false });
        },
        { giveUpAfter: { minutes: 30 } },
      );
      const outbox = await openOutbox(db, config, { clock: () => T0, jitter: () => jitter });
      await outbox.fire('mail.Send', { n: 1 });
      await outbox.runRelay({ passes: 1, sleep: async () => {} });
      availableAt.push(
        ((await rowsOf(outbox, 'mail.smtp'))[0].availableAt.getTime() - T0.getTime()) / 1000,
      );
    }
    expect(availableAt[0]).toBe(60);
    expect(availableAt[1]).toBeGreaterThan(119);
    expect(availableAt[1]).toBeLessThan(120);
  });

  it('a deferral past settings.maxRetryAfterSeconds is capped, with a warning naming both numbers', async () => {
    const { config } = deferring(
      () => {
        throw new RetryAfter(500, { counts: false });
      },
      { giveUpAfter: { minutes: 600 }, maxRetryAfterSeconds: 100 },
    );
    const logger = captureLogger();
    const outbox = await openOutbox(db, config, { clock: () => T0, jitter: () => 0.5, logger });
    await outbox.fire('mail.Send', { n: 1 });
    await outbox.runRelay({ passes: 1, sleep: async () => {} });
    const [row] = await rowsOf(outbox, 'mail.smtp');
    expect(row).toMatchObject({ status: 'failed', attempts: 0 });
    expect(row.availableAt).toEqual(new Date(T0.getTime() + 150_000));
    expect(logger.messages('warn')).toContain(
      'receiver mail.smtp asked to retry after 500s; clamped to settings.maxRetryAfterSeconds (100s)',
    );
  });

  it('a deferral dead-letters the row once it has been owed longer than giveUpAfter', async () => {
    const { config, failures } = deferring(
      () => {
        throw new RetryAfter(600, { counts: false });
      },
      { giveUpAfter: { minutes: 30 } },
    );
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0 });
    await outbox.fire('mail.Send', { n: 1 });
    const statuses: string[] = [];
    for (let i = 0; i < 4; i++) {
      await outbox.runRelay({ passes: 1, sleep: async () => {} });
      statuses.push((await rowsOf(outbox, 'mail.smtp'))[0].status);
      clock.advance(600_000 + 1);
    }
    // Owed 0, 10, 20, 30 min (+3 ms): the fourth is past the bound.
    expect(statuses).toEqual(['failed', 'failed', 'failed', 'dead']);
    const [row] = await rowsOf(outbox, 'mail.smtp');
    expect(row).toMatchObject({ status: 'dead', attempts: 0 });
    expect(row.lastError).toContain('owed longer than giveUpAfter, 1800s');
    expect(failures.map((f) => [f.attempt, f.status])).toEqual([
      [1, 'failed'],
      [1, 'failed'],
      [1, 'failed'],
      [1, 'dead'],
    ]);
  });

  it('giveUpAfter counts from the due time when the row has one', async () => {
    const clock = testClock();
    const dueAt = new Date(T0.getTime() + 3_600_000);
    const { config } = deferring(
      (attempt) => {
        if (attempt === 1 && clock.now() < dueAt) throw new NotYet(dueAt);
        throw new RetryAfter(60, { counts: false });
      },
      { giveUpAfter: { minutes: 30 } },
    );
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0 });
    await outbox.fire('mail.Send', { n: 1 });
    await outbox.runRelay({ passes: 1, sleep: async () => {} });
    expect((await rowsOf(outbox, 'mail.smtp'))[0]).toMatchObject({ status: 'pending', dueAt });
    // 80 minutes after the event was recorded, but 20 after it came due: still deferred.
    clock.set(new Date(dueAt.getTime() + 20 * 60_000));
    await outbox.runRelay({ passes: 1, sleep: async () => {} });
    expect((await rowsOf(outbox, 'mail.smtp'))[0].status).toBe('failed');
    clock.set(new Date(dueAt.getTime() + 31 * 60_000));
    await outbox.runRelay({ passes: 1, sleep: async () => {} });
    expect((await rowsOf(outbox, 'mail.smtp'))[0].status).toBe('dead');
  });

  it('without giveUpAfter a deferral is counted like any RetryAfter, with one warning per process naming the receiver', async () => {
    const { config, failures } = deferring(() => {
      throw new RetryAfter(30, { counts: false });
    });
    const logger = captureLogger();
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0.5, logger });
    await outbox.fire('mail.Send', { n: 1 });
    await outbox.fire('mail.Send', { n: 2 });
    await outbox.runRelay({ passes: 1, sleep: async () => {} });
    clock.advance(30_000);
    await outbox.runRelay({ passes: 1, sleep: async () => {} });
    // Counted, no jitter (exactly 30 s), and no pause: both rows of the batch were attempted.
    expect((await rowsOf(outbox, 'mail.smtp')).map((r) => [r.status, r.attempts])).toEqual([
      ['failed', 2],
      ['failed', 2],
    ]);
    const [row] = await rowsOf(outbox, 'mail.smtp');
    expect(row.availableAt).toEqual(new Date(T0.getTime() + 60_000));
    expect(failures.map((f) => f.attempt)).toEqual([1, 1, 2, 2]);
    const warnings = logger.messages('warn').filter((m) => m.includes('declares no giveUpAfter'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(
      'receiver mail.smtp deferred with RetryAfter(30, { counts: false })',
    );
  });

  it("the relay that ran a deferral pauses the lane for its seconds: the lane's unstarted rows are handed back, claimable at once, and nothing of the lane is claimed until the pause ends", async () => {
    const clock = testClock();
    const { config, seen } = lanesConfig(clock);
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0.5 });
    for (const n of [1, 2, 3]) await outbox.fire('mail.Send', { n });
    let handedBack: { status: string; claimable: boolean }[] = [];
    const report = await outbox.runRelay({
      lane: 'mail',
      passes: 12,
      concurrency: 1,
      pollIntervalMs: 10_000,
      sleep: clockSleep(clock, async (idle) => {
        if (idle !== 1) return;
        handedBack = (await rowsOf(outbox, 'mail.smtp'))
          .slice(1)
          .map((r) => ({ status: r.status, claimable: r.availableAt <= clock.now() }));
      }),
    });
    expect(handedBack).toEqual([
      { status: 'pending', claimable: true },
      { status: 'pending', claimable: true },
    ]);
    // Paused from 0 s to 60 s: the first pass at or after 60 s takes the handed-back rows,
    // and the deferred row comes back at 60 s × 1.5 (the jitter).
    expect(seen).toEqual([
      { key: 'mail.smtp', n: 2, atS: 60 },
      { key: 'mail.smtp', n: 3, atS: 60 },
      { key: 'mail.smtp', n: 1, atS: 90 },
    ]);
    expect(report.handedBack).toBe(2);
    expect(report.succeeded).toBe(3);
  });

  it('a relay serving every lane leaves a paused lane out and goes on delivering the rest, a mixed batch included', async () => {
    const clock = testClock();
    const { config, seen } = lanesConfig(clock);
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0.5 });
    await outbox.fire('mail.Send', { n: 1 });
    await outbox.fire('mail.Send', { n: 2 });
    await outbox.fire('shop.Placed', { n: 1 });
    await outbox.runRelay({
      lane: null,
      passes: 4,
      concurrency: 1,
      pollIntervalMs: 10_000,
      sleep: clockSleep(clock, async (idle) => {
        if (idle === 1) await outbox.fire('shop.Placed', { n: 2 });
      }),
    });
    // The mixed batch's shop row went at 0 s; a shop event fired during the pause at 10 s;
    // the mail lane waits out its pause.
    expect(seen).toEqual([
      { key: 'shop.audit', n: 1, atS: 0 },
      { key: 'shop.audit', n: 2, atS: 10 },
    ]);
    expect((await rowsOf(outbox, 'mail.smtp')).map((r) => r.status)).toEqual(['failed', 'pending']);
  });

  it('a paused lane covers its lapsed claims too', async () => {
    const clock = testClock();
    const { config, seen } = lanesConfig(clock);
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0.5 });
    await outbox.fire('mail.Send', { n: 1 });
    await outbox.runRelay({
      lane: null,
      passes: 9,
      pollIntervalMs: 10_000,
      sleep: clockSleep(clock, async (idle) => {
        if (idle !== 1) return;
        // During the pause: a mail row claimed by a relay that died (its lease lapsed at
        // 1 s), and a shop event.
        const mail = await outbox.fire('mail.Send', { n: 2 });
        await outbox.fire('shop.Placed', { n: 1 });
        await runtimeOf(outbox).store.claim({
          token: { workerId: 'dead-relay', claimedAt: clock.now() },
          now: clock.now(),
          leaseUntil: new Date(T0.getTime() + 1_000),
          limit: 1,
          onlyEvents: [mail.sequence],
        });
      }),
    });
    expect(seen).toEqual([
      { key: 'shop.audit', n: 1, atS: 10 },
      { key: 'mail.smtp', n: 2, atS: 60 },
    ]);
  });

  it('a paused default lane with no named lanes claims nothing', async () => {
    const clock = testClock();
    const { config, seen } = lanesConfig(clock, { mailLane: 'default' });
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0.5 });
    const claims = recordClaims(outbox);
    await outbox.fire('mail.Send', { n: 1 });
    await outbox.fire('mail.Send', { n: 2 });
    await outbox.runRelay({
      passes: 8,
      concurrency: 1,
      pollIntervalMs: 10_000,
      sleep: clockSleep(clock, async (idle) => {
        if (idle === 1) await outbox.fire('shop.Placed', { n: 1 });
      }),
    });
    // The first claim at 0 s, then none while paused (no statement sent at all), then 60 s.
    const claimTimes = claims.map((c) => (c.now.getTime() - T0.getTime()) / 1000);
    expect(claimTimes.filter((s) => s > 0 && s < 60)).toEqual([]);
    expect(seen).toEqual([
      { key: 'mail.smtp', n: 2, atS: 60 },
      { key: 'shop.audit', n: 1, atS: 60 },
    ]);
  });

  it('a deferral sets its lane aside and the pass delivers the rest', async () => {
    const clock = testClock();
    const { config, seen } = lanesConfig(clock);
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0.5 });
    await outbox.fire('mail.Send', { n: 1 });
    await outbox.fire('mail.Send', { n: 2 });
    await outbox.fire('shop.Placed', { n: 1 });
    await outbox.fire('shop.Placed', { n: 2 });
    const counts = await drainOutbox(outbox, { limit: undefined });
    expect(counts).toMatchObject({ succeeded: 2, failed: 1 });
    expect(seen.map((s) => `${s.key}:${s.n}`)).toEqual(['shop.audit:1', 'shop.audit:2']);
    // The deferred row waits out its time; the one handed back is claimable at once.
    expect((await rowsOf(outbox, 'mail.smtp')).map((r) => [r.status, r.attempts])).toEqual([
      ['failed', 0],
      ['pending', 0],
    ]);
  });

  it('deliverOne records a deferral but pauses nothing', async () => {
    const clock = testClock();
    const { config, seen } = lanesConfig(clock);
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0.5 });
    await outbox.fire('mail.Send', { n: 1 });
    await outbox.fire('mail.Send', { n: 2 });
    const [first, second] = await rowsOf(outbox, 'mail.smtp');
    expect(await outbox.deliverOne(first.id)).toBe('failed');
    expect(await outbox.deliverOne(second.id)).toBe('succeeded');
    expect(seen.map((s) => s.n)).toEqual([2]);
    expect((await rowsOf(outbox, 'mail.smtp'))[0]).toMatchObject({ status: 'failed', attempts: 0 });
  });
});

describeSplittingDialects('relay: a deferral meets another relay of its lane', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('the pause is per relay: the rows one relay handed back are delivered at once by another relay of the lane', async () => {
    const clock = testClock();
    const seen: string[] = [];
    let calls = 0;
    const config = defineOutbox({
      events: { 'mail.Send': Send },
      receivers: {
        'mail.smtp': receiver(Send, {
          handle: (e, ctx) => {
            calls += 1;
            if (calls === 1) throw new RetryAfter(60, { counts: false });
            seen.push(`${ctx.deliveryId}:${e.payload.n}`);
          },
          lane: 'mail',
          giveUpAfter: { hours: 1 },
        }),
      },
    });
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0.5 });
    for (const n of [1, 2, 3]) await outbox.fire('mail.Send', { n });
    let other: Awaited<ReturnType<Outbox['runRelay']>> | undefined;
    const paused = await outbox.runRelay({
      lane: 'mail',
      workerId: 'paused',
      passes: 3,
      concurrency: 1,
      pollIntervalMs: 10_000,
      sleep: clockSleep(clock, async (idle) => {
        if (idle === 1)
          other = await outbox.runRelay({ lane: 'mail', workerId: 'other', untilIdle: true });
      }),
    });
    expect(paused).toMatchObject({ failed: 1, succeeded: 0, handedBack: 2 });
    expect(other).toMatchObject({ succeeded: 2 });
    expect(seen.map((s) => s.split(':')[1]).sort()).toEqual(['2', '3']);
  });
});
