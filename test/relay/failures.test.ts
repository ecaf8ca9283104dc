import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type DeliveryFailure,
  defineOutbox,
  event,
  NotYet,
  PermanentFailure,
  RetryAfter,
  receiver,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  captureLogger,
  freshPrefix,
  openOutbox,
  rowsOf,
  shortSleep,
  T0,
  testClock,
} from './support.js';

describeEachDialect('relay: failures, dead letters and receiver signals', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Charge = event({ schema: z.object({ n: z.number() }) });

  /** One receiver whose handler does what `behave` says; returns the config and its failures. */
  function single(
    behave: (attempt: number) => void,
    options: { maxAttempts?: number; maxRetryAfterSeconds?: number } = {},
  ) {
    const failures: DeliveryFailure[] = [];
    const config = defineOutbox({
      events: { 'pay.Charge': Charge },
      receivers: {
        'pay.gateway': receiver(Charge, {
          handle: (_e, ctx) => behave(ctx.attempt),
          maxAttempts: options.maxAttempts ?? 3,
          onFailure: (f) => void failures.push(f),
        }),
      },
      settings: {
        backoff: { baseSeconds: 10, capSeconds: 100 },
        maxRetryAfterSeconds: options.maxRetryAfterSeconds ?? 3600,
      },
    });
    return { config, failures };
  }

  it('a delivery is dead-lettered when its attempt budget is spent', async () => {
    const { config, failures } = single((attempt) => {
      throw new Error(`refused ${attempt}`);
    });
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await outbox.fire('pay.Charge', { n: 1 });

    const statuses: string[] = [];
    for (let i = 0; i < 4; i++) {
      await outbox.runRelay({ passes: 1, sleep: shortSleep() });
      statuses.push((await rowsOf(outbox, 'pay.gateway'))[0].status);
      clock.advance(3_600_000);
    }
    expect(statuses).toEqual(['failed', 'failed', 'dead', 'dead']);
    const [row] = await rowsOf(outbox, 'pay.gateway');
    expect(row).toMatchObject({
      status: 'dead',
      attempts: 3,
      maxAttempts: 3,
      lastError: 'Error: refused 3',
      completedAt: new Date(T0.getTime() + 2 * 3_600_000),
    });
    expect(failures.map((f) => [f.attempt, f.status])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'dead'],
    ]);
  });

  it('PermanentFailure dead-letters the delivery on the attempt that raised it', async () => {
    const { config, failures } = single(() => {
      throw new PermanentFailure('410 Gone: account deleted');
    });
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await outbox.fire('pay.Charge', { n: 1 });
    const report = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(report.dead).toBe(1);
    expect((await rowsOf(outbox, 'pay.gateway'))[0]).toMatchObject({
      status: 'dead',
      attempts: 1,
      lastError: 'PermanentFailure: 410 Gone: account deleted',
      completedAt: T0,
    });
    expect(failures.map((f) => f.status)).toEqual(['dead']);
  });

  it('RetryAfter(seconds) schedules the next attempt exactly that many seconds from now and counts an attempt', async () => {
    const { config } = single(() => {
      throw new RetryAfter(120, '429 Too Many Requests');
    });
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0.999 });
    await outbox.fire('pay.Charge', { n: 1 });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect((await rowsOf(outbox, 'pay.gateway'))[0]).toMatchObject({
      status: 'failed',
      attempts: 1,
      lastError: 'RetryAfter: 429 Too Many Requests',
      availableAt: new Date(T0.getTime() + 120_000),
    });
  });

  it('RetryAfter on the last attempt of the budget dead-letters the delivery', async () => {
    const { config } = single(
      () => {
        throw new RetryAfter(5);
      },
      { maxAttempts: 2 },
    );
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await outbox.fire('pay.Charge', { n: 1 });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    clock.advance(5_000);
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect((await rowsOf(outbox, 'pay.gateway'))[0]).toMatchObject({
      status: 'dead',
      attempts: 2,
      lastError: 'RetryAfter: retry after 5s',
    });
  });

  it('a RetryAfter past settings.maxRetryAfterSeconds is clamped to it, with a warning naming both numbers', async () => {
    const { config } = single(
      () => {
        throw new RetryAfter(7200);
      },
      { maxRetryAfterSeconds: 600 },
    );
    const clock = testClock();
    const logger = captureLogger();
    const outbox = await openOutbox(db, config, { clock: clock.now, logger });
    await outbox.fire('pay.Charge', { n: 1 });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect((await rowsOf(outbox, 'pay.gateway'))[0]).toMatchObject({
      status: 'failed',
      attempts: 1,
      availableAt: new Date(T0.getTime() + 600_000),
    });
    const warning = logger.messages('warn').find((m) => m.includes('7200'));
    expect(warning).toContain('600');
  });

  it('NotYet moves the row to the time it names with no attempt spent, and it runs then', async () => {
    const until = new Date(Date.now() + 3 * 86_400_000);
    const attemptsSeen: number[] = [];
    const { config, failures } = single((attempt) => {
      attemptsSeen.push(attempt);
      if (attemptsSeen.length === 1) throw new NotYet(until);
    });
    const clock = testClock(new Date());
    const started = clock.now();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await outbox.fire('pay.Charge', { n: 1 });

    const report = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(report.pending).toBe(1);
    expect((await rowsOf(outbox, 'pay.gateway'))[0]).toMatchObject({
      status: 'pending',
      attempts: 0,
      availableAt: until,
      dueAt: until,
      lastError: null,
      completedAt: null,
    });
    expect(failures).toEqual([]);

    // Not claimed before its time…
    clock.set(new Date(until.getTime() - 1));
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(attemptsSeen).toEqual([1]);
    // …and run at it, handed the same attempt number since nothing was spent.
    clock.set(until);
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(attemptsSeen).toEqual([1, 1]);
    expect((await rowsOf(outbox, 'pay.gateway'))[0]).toMatchObject({
      status: 'succeeded',
      attempts: 1,
    });
    expect(started.getTime()).toBeLessThan(until.getTime());
  });

  it('a NotYet for a time already come and a negative RetryAfter are ordinary, counted failures saying why', async () => {
    const errors = [() => new NotYet(new Date(Date.now() - 1_000)), () => new RetryAfter(-5)];
    let call = 0;
    const { config } = single(() => {
      throw errors[call++]();
    });
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => 0.5 });
    await outbox.fire('pay.Charge', { n: 1 });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect((await rowsOf(outbox, 'pay.gateway'))[0]).toMatchObject({
      status: 'failed',
      attempts: 1,
      availableAt: new Date(T0.getTime() + 5_000),
    });
    expect((await rowsOf(outbox, 'pay.gateway'))[0].lastError).toMatch(
      /^RangeError: NotYet\(until\) needs a time in the future/,
    );
    clock.advance(5_000);
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect((await rowsOf(outbox, 'pay.gateway'))[0]).toMatchObject({
      status: 'failed',
      attempts: 2,
      lastError: 'TypeError: RetryAfter(seconds) needs a finite number ≥ 0 (got -5)',
    });
  });

  it("last_error holds the error's name, message and cause, cut to 2000 characters", async () => {
    const errors = [
      () => new Error('upstream refused', { cause: new TypeError('socket hang up') }),
      () => new Error('x'.repeat(5_000)),
      () => 'a thrown string',
    ];
    let call = 0;
    const { config } = single(
      () => {
        throw errors[call++]();
      },
      { maxAttempts: 10 },
    );
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await outbox.fire('pay.Charge', { n: 1 });
    const lastErrors: (string | null)[] = [];
    for (let i = 0; i < 3; i++) {
      await outbox.runRelay({ passes: 1, sleep: shortSleep() });
      lastErrors.push((await rowsOf(outbox, 'pay.gateway'))[0].lastError);
      clock.advance(3_600_000);
    }
    expect(lastErrors[0]).toBe('Error: upstream refused (caused by TypeError: socket hang up)');
    expect(lastErrors[1]).toHaveLength(2000);
    expect(lastErrors[1]).toMatch(/^Error: x+…$/);
    expect(lastErrors[2]).toBe('a thrown string');
  });

  it('the relay survives a fault of its own while delivering a row: it logs it, hands the row back and goes on', async () => {
    const { config } = single(() => {
      throw new Error('receiver failed');
    });
    const clock = testClock();
    const logger = captureLogger();
    let faults = 1;
    const outbox = await openOutbox(db, config, {
      clock: clock.now,
      logger,
      // The first draw fails: a fault in the relay's own bookkeeping, not the receiver's.
      jitter: () => {
        if (faults-- > 0) throw new Error('entropy ran out');
        return 0.5;
      },
    });
    await outbox.fire('pay.Charge', { n: 1 });
    await outbox.fire('pay.Charge', { n: 2 });
    const first = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(logger.messages('error')).toEqual([
      expect.stringMatching(
        /^delivering \d+ \(pay\.gateway\) failed inside the relay; handed back$/,
      ),
    ]);
    // The faulted row is handed back at once (lease lapsed, no attempt spent); the rest
    // of the batch went on and was recorded.
    expect(first.failed).toBe(1);
    // (Which row draws the faulty jitter depends on which handler fails first.)
    const rows = await rowsOf(outbox, 'pay.gateway');
    const faulted = rows.find((r) => r.attempts === 0)!;
    const other = rows.find((r) => r !== faulted)!;
    expect(faulted).toBeDefined();
    expect(faulted.status === 'pending' || faulted.leaseUntil!.getTime() <= T0.getTime()).toBe(
      true,
    );
    expect(other).toMatchObject({ status: 'failed', attempts: 1 });

    // The next pass takes the faulted row straight back and records it.
    const second = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(second.failed).toBe(1);
    for (const row of await rowsOf(outbox, 'pay.gateway'))
      expect(row).toMatchObject({
        status: 'failed',
        attempts: 1,
        lastError: 'Error: receiver failed',
        availableAt: new Date(T0.getTime() + 5_000),
      });
  });

  it('an event whose stored payload no longer decodes is an ordinary, counted failure', async () => {
    const seen: unknown[] = [];
    const Old = event({ schema: z.object({ n: z.number() }) });
    const before = defineOutbox({
      events: { 'pay.Charge': Old },
      receivers: { 'pay.gateway': receiver(Old, { handle: () => {} }) },
    });
    const Stricter = event({ schema: z.object({ n: z.number(), currency: z.string() }) });
    const after = defineOutbox({
      events: { 'pay.Charge': Stricter },
      receivers: { 'pay.gateway': receiver(Stricter, { handle: (e) => void seen.push(e) }) },
    });
    const tablePrefix = freshPrefix();
    const first = await openOutbox(db, before, { tablePrefix });
    await first.fire('pay.Charge', { n: 1 });
    const second = await openOutbox(db, after, { tablePrefix, clock: testClock().now });
    await second.runRelay({ passes: 1, sleep: shortSleep() });
    expect(seen).toEqual([]);
    const [row] = await rowsOf(second, 'pay.gateway');
    expect(row.status).toBe('failed');
    expect(row.attempts).toBe(1);
    expect(row.lastError).toMatch(/no longer decodes: currency/);
  });
});
