import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type DeliveryContext,
  type DeliveryFailure,
  defineOutbox,
  event,
  NotYet,
  receiver,
  ValidationError,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { eventCount } from '../fire/support.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  captureLogger,
  openOutbox,
  rowsOf,
  shortSleep,
  T0,
  tableName,
  testClock,
} from './support.js';

const HOUR = 3_600_000;
const at = (ms: number) => new Date(T0.getTime() + ms);

describeEachDialect('scheduled reactions: due and NotYet', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const OfferMade = event({
    schema: z.object({ offerId: z.string(), expiresAt: z.coerce.date().optional() }),
  });

  /** An offer that is sent at once and expired 48 hours after it was made. */
  function offers(
    options: {
      expire?: (ctx: DeliveryContext) => void;
      due?: { hours: number } | ((e: { payload: { expiresAt?: Date } }) => Date);
    } = {},
  ) {
    const log: { receiver: string; attempt: number; dueAt: Date | null }[] = [];
    const failures: DeliveryFailure[] = [];
    const config = defineOutbox({
      events: { 'shop.OfferMade': OfferMade },
      receivers: {
        'mail.offer': receiver(OfferMade, {
          handle: (_e, ctx) =>
            void log.push({ receiver: 'mail', attempt: ctx.attempt, dueAt: ctx.dueAt }),
        }),
        'offers.expire': receiver(OfferMade, {
          due: (options.due ?? { hours: 48 }) as { hours: number },
          handle: (_e, ctx) => {
            options.expire?.(ctx);
            log.push({ receiver: 'expire', attempt: ctx.attempt, dueAt: ctx.dueAt });
          },
          onFailure: (f) => void failures.push(f),
        }),
      },
    });
    return { config, log, failures };
  }

  it('writes the row due at its delay counted from occurredAt, as both available_at and due_at', async () => {
    const { config } = offers();
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    const occurredAt = at(-HOUR);
    await outbox.fire('shop.OfferMade', { offerId: 'o1' }, { occurredAt });

    const [row] = await rowsOf(outbox, 'offers.expire');
    expect(row.availableAt).toEqual(at(47 * HOUR));
    expect(row.dueAt).toEqual(at(47 * HOUR));
    // the immediate receiver of the same event is owed now
    expect((await rowsOf(outbox, 'mail.offer'))[0]).toMatchObject({ availableAt: T0, dueAt: null });
  });

  it('makes a due time already past due as soon as the row is written, never earlier than now', async () => {
    const { config } = offers();
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await outbox.fire('shop.OfferMade', { offerId: 'old' }, { occurredAt: at(-72 * HOUR) });
    const [row] = await rowsOf(outbox, 'offers.expire');
    expect(row).toMatchObject({ availableAt: T0, dueAt: T0 });
  });

  it('resolves a due function from the event, for a time the event itself names', async () => {
    const { config } = offers({ due: (e) => e.payload.expiresAt ?? at(HOUR) });
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await outbox.fire('shop.OfferMade', { offerId: 'o1', expiresAt: at(5 * HOUR) });
    expect((await rowsOf(outbox, 'offers.expire'))[0].dueAt).toEqual(at(5 * HOUR));
  });

  it.each([
    ['a string', () => '2031-03-02T00:00:00Z'],
    ['an invalid Date', () => new Date(Number.NaN)],
    ['undefined', () => undefined],
  ])(
    'refuses a due function answering %s, naming the receiver, and writes nothing',
    async (_w, answer) => {
      const { config } = offers({ due: answer as () => Date });
      const outbox = await openOutbox(db, config);
      const error = await outbox.fire('shop.OfferMade', { offerId: 'o1' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toMatch(
        /^fire\(\): receiver offers\.expire's due for shop\.OfferMade returned .*; it must return a valid Date$/,
      );
      expect(await eventCount(outbox)).toBe(0);
    },
  );

  it("fails fire() and rolls the caller's change back when the due function throws", async () => {
    const table = tableName(db, 'offers');
    await db.sequelize.query(`CREATE TABLE ${table} (id varchar(10) PRIMARY KEY)`);
    const { config } = offers({
      due: () => {
        throw new Error('no expiry policy for this market');
      },
    });
    const outbox = await openOutbox(db, config);
    await expect(
      db.sequelize.transaction(async (t) => {
        await db.sequelize.query(`INSERT INTO ${table} (id) VALUES ('o1')`, { transaction: t });
        await outbox.fire('shop.OfferMade', { offerId: 'o1' }, { transaction: t });
      }),
    ).rejects.toThrow('no expiry policy for this market');
    expect((await db.sequelize.query(`SELECT id FROM ${table}`))[0]).toEqual([]);
    expect(await eventCount(outbox)).toBe(0);
  });

  it('is not claimed before its due time, by the relay or by a drain ignoring the backoff', async () => {
    const { config, log } = offers();
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await outbox.fire('shop.OfferMade', { offerId: 'o1' });

    await outbox.runRelay({ passes: 2, sleep: shortSleep() });
    // ignoring the backoff never ignores the schedule
    await drainOutbox(outbox);
    expect(log.map((l) => l.receiver)).toEqual(['mail']);
    expect((await rowsOf(outbox, 'offers.expire'))[0].status).toBe('pending');

    clock.set(at(48 * HOUR - 1));
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(log.map((l) => l.receiver)).toEqual(['mail']);
    clock.set(at(48 * HOUR));
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(log.map((l) => l.receiver)).toEqual(['mail', 'expire']);
  });

  it('drainOutbox({ now }) moves a test forward to the due time, and hands the receiver its due time', async () => {
    const { config, log } = offers();
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await outbox.fire('shop.OfferMade', { offerId: 'o1' });

    expect((await drainOutbox(outbox, { now: at(47 * HOUR) })).succeeded).toBe(1);
    expect((await drainOutbox(outbox, { now: at(48 * HOUR) })).succeeded).toBe(1);
    expect(log).toEqual([
      // an immediate row's due time is when it became owed: its event's recording
      { receiver: 'mail', attempt: 1, dueAt: T0 },
      { receiver: 'expire', attempt: 1, dueAt: at(48 * HOUR) },
    ]);
    expect((await rowsOf(outbox, 'offers.expire'))[0].status).toBe('succeeded');
  });

  it('deliverOne refuses a row whose due time has not come', async () => {
    const { config, log } = offers();
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('shop.OfferMade', { offerId: 'o1' });
    const [row] = await rowsOf(outbox, 'offers.expire');
    expect(await outbox.deliverOne(row.id)).toBeNull();
    expect(log).toEqual([]);
  });

  it('NotYet moves the row to its time with the same attempt, no failure recorded and no onFailure', async () => {
    const extended = at(72 * HOUR);
    const { config, log, failures } = offers({
      expire: (ctx) => {
        if (ctx.dueAt!.getTime() < extended.getTime()) throw new NotYet(extended);
      },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('shop.OfferMade', { offerId: 'o1' });

    const first = await drainOutbox(outbox, { now: at(48 * HOUR) });
    expect(first).toMatchObject({ succeeded: 1, pending: 1, failed: 0 });
    expect((await rowsOf(outbox, 'offers.expire'))[0]).toMatchObject({
      status: 'pending',
      attempts: 0,
      availableAt: extended,
      dueAt: extended,
      lastError: null,
    });
    expect(failures).toEqual([]);

    // not before the moved time; then the same attempt number, handed the moved time
    await drainOutbox(outbox, { now: at(71 * HOUR) });
    expect(log.filter((l) => l.receiver === 'expire')).toEqual([]);
    await drainOutbox(outbox, { now: extended });
    expect(log.filter((l) => l.receiver === 'expire')).toEqual([
      { receiver: 'expire', attempt: 1, dueAt: extended },
    ]);
  });

  it('the documented pattern does the work of a row that runs after the moved time', async () => {
    // the offer is extended to 60 hours; the row runs late, at 70 hours
    const moved = at(60 * HOUR);
    const clock = testClock();
    const { config, log } = offers({
      expire: (ctx) => {
        const now = clock.now();
        const floor = Math.max(ctx.dueAt!.getTime(), now.getTime());
        if (moved.getTime() > floor) throw new NotYet(moved);
      },
    });
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await outbox.fire('shop.OfferMade', { offerId: 'o1' });
    clock.set(at(70 * HOUR));
    await drainOutbox(outbox);
    expect(log.map((l) => l.receiver)).toEqual(['mail', 'expire']);
    expect((await rowsOf(outbox, 'offers.expire'))[0].status).toBe('succeeded');
  });

  it('NotYet sets nothing else aside: the rest of the batch is delivered', async () => {
    const { config, log } = offers({
      expire: (ctx) => {
        if (ctx.attempt === 1 && ctx.dueAt!.getTime() === at(48 * HOUR).getTime()) {
          throw new NotYet(at(50 * HOUR));
        }
      },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fireMany([
      { name: 'shop.OfferMade', payload: { offerId: 'a' } },
      { name: 'shop.OfferMade', payload: { offerId: 'b' } },
    ]);
    const report = await drainOutbox(outbox, { now: at(48 * HOUR) });
    expect(report).toMatchObject({ succeeded: 2, pending: 2 });
    expect(log.map((l) => l.receiver)).toEqual(['mail', 'mail']);
  });

  it('NotYet is not capped by maxRetryAfterSeconds', async () => {
    const farAhead = at(400 * 24 * HOUR);
    const config = defineOutbox({
      events: { 'shop.OfferMade': OfferMade },
      receivers: {
        'offers.expire': receiver(OfferMade, {
          due: { hours: 1 },
          handle: () => {
            throw new NotYet(farAhead);
          },
        }),
      },
      settings: { maxRetryAfterSeconds: 60 },
    });
    const logger = captureLogger();
    const outbox = await openOutbox(db, config, { clock: testClock().now, logger });
    await outbox.fire('shop.OfferMade', { offerId: 'o1' });
    await drainOutbox(outbox, { now: at(HOUR) });
    expect((await rowsOf(outbox, 'offers.expire'))[0]).toMatchObject({
      status: 'pending',
      availableAt: farAhead,
    });
    expect(logger.messages('warn')).toEqual([]);
  });

  it('a NotYet naming a time already come is refused where it is built, and recorded as an ordinary failure', async () => {
    const { config, failures } = offers({
      expire: () => {
        throw new NotYet(new Date(Date.now() - 1000));
      },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('shop.OfferMade', { offerId: 'o1' });
    await drainOutbox(outbox, { now: at(48 * HOUR), limit: 2 });
    const [row] = await rowsOf(outbox, 'offers.expire');
    expect(row).toMatchObject({ status: 'failed', attempts: 1 });
    expect(row.lastError).toMatch(/^RangeError: NotYet\(until\) needs a time in the future/);
    expect(failures.map((f) => f.status)).toEqual(['failed']);
  });

  it("an inline receiver raising NotYet fails the caller's change", async () => {
    const config = defineOutbox({
      events: { 'shop.OfferMade': OfferMade },
      receivers: {
        'check.inline': receiver(OfferMade, {
          mode: 'inline',
          handle: () => {
            throw new NotYet(at(HOUR));
          },
        }),
      },
    });
    const outbox = await openOutbox(db, config);
    await expect(outbox.fire('shop.OfferMade', { offerId: 'o1' })).rejects.toBeInstanceOf(NotYet);
    expect(await eventCount(outbox)).toBe(0);
  });

  it('an onCommit receiver raising NotYet has it logged', async () => {
    const config = defineOutbox({
      events: { 'shop.OfferMade': OfferMade },
      receivers: {
        'notify.after': receiver(OfferMade, {
          mode: 'onCommit',
          handle: () => {
            throw new NotYet(at(HOUR));
          },
        }),
      },
    });
    const logger = captureLogger();
    const outbox = await openOutbox(db, config, { logger });
    await outbox.fire('shop.OfferMade', { offerId: 'o1' });
    expect(logger.messages('error')).toEqual([
      'onCommit receiver notify.after failed for shop.OfferMade; not retried (onCommit is best effort)',
    ]);
    expect(await eventCount(outbox)).toBe(1);
  });

  it('is refused beside inline and onCommit, beside eager and beside targets, naming the receiver', () => {
    const declare = (options: Record<string, unknown>) => () =>
      defineOutbox({
        events: { 'shop.OfferMade': OfferMade },
        receivers: {
          'offers.expire': receiver(OfferMade, {
            due: { hours: 48 },
            handle: () => {},
            ...options,
          } as never),
        },
      });
    expect(declare({ mode: 'inline' })).toThrow(
      'receivers["offers.expire"].due needs a durable receiver (mode is "inline")',
    );
    expect(declare({ mode: 'onCommit' })).toThrow(
      'receivers["offers.expire"].due needs a durable receiver (mode is "onCommit")',
    );
    expect(declare({ eager: true })).toThrow(
      'receivers["offers.expire"].due cannot be combined with eager: true',
    );
    expect(declare({ targets: () => ['a'] })).toThrow(
      'receivers["offers.expire"].due cannot be combined with targets',
    );
    expect(declare({ due: { hours: 0 } })).toThrow(
      'receivers["offers.expire"].due must be longer than zero, e.g. { hours: 48 } (got {"hours":0})',
    );
    expect(declare({ due: { weeks: 1 } })).toThrow(
      'receivers["offers.expire"].due has an unknown option "weeks" (known: days, hours, minutes, seconds, milliseconds)',
    );
  });
});
