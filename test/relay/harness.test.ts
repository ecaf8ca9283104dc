import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, NotYet, receiver } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { assertFired, drainOutbox, OutboxAssertionError } from '../../testing/index.js';
import { describeEachDialect } from '../support/dialects.js';
import { openOutbox, rowsOf } from './support.js';

describeEachDialect('testing: drainOutbox and assertFired', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const OrderPlaced = event({
    schema: z.object({ orderId: z.string(), placedAt: z.coerce.date(), total: z.number() }),
  });
  const Refunded = event({ schema: z.object({ orderId: z.string() }) });

  function shop(behave: (orderId: string, attempt: number) => void = () => {}) {
    const handled: string[] = [];
    const config = defineOutbox({
      events: { 'shop.OrderPlaced': OrderPlaced, 'shop.Refunded': Refunded },
      receivers: {
        'mail.confirm': receiver(OrderPlaced, {
          handle: (e, ctx) => {
            behave(e.payload.orderId, ctx.attempt);
            handled.push(e.payload.orderId);
          },
          maxAttempts: 4,
        }),
      },
      settings: { backoff: { baseSeconds: 3600, capSeconds: 3600 } },
    });
    return { config, handled };
  }
  const placed = (orderId: string) => ({
    orderId,
    placedAt: new Date('2031-05-06T07:08:09.010Z'),
    total: 10,
  });

  it('drainOutbox ignores the retry backoff by default: a failing receiver is retried until it is dead', async () => {
    const { config } = shop(() => {
      throw new Error('smtp down');
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('shop.OrderPlaced', placed('o1'));
    const counts = await drainOutbox(outbox);
    expect(counts).toMatchObject({ failed: 3, dead: 1, succeeded: 0 });
    expect((await rowsOf(outbox, 'mail.confirm'))[0]).toMatchObject({
      status: 'dead',
      attempts: 4,
      lastError: 'Error: smtp down',
    });
  });

  it('drainOutbox with respectBackoff leaves scheduled retries alone, and now moves its claims forward', async () => {
    const { config, handled } = shop((_id, attempt) => {
      if (attempt === 1) throw new Error('first try fails');
    });
    const outbox = await openOutbox(db, config, { jitter: () => 0.5 });
    await outbox.fire('shop.OrderPlaced', placed('o1'));
    expect(await drainOutbox(outbox, { respectBackoff: true })).toMatchObject({ failed: 1 });
    const [row] = await rowsOf(outbox, 'mail.confirm');
    expect(row).toMatchObject({ status: 'failed', attempts: 1 });

    const waiting = await drainOutbox(outbox, { respectBackoff: true });
    expect(Object.values(waiting).every((n) => n === 0)).toBe(true);
    expect((await rowsOf(outbox, 'mail.confirm'))[0]).toMatchObject({
      status: 'failed',
      attempts: 1,
    });

    // Just before the retry is due, still nothing; at it, the retry runs.
    const due = row.availableAt.getTime();
    expect(
      (await drainOutbox(outbox, { respectBackoff: true, now: new Date(due - 1) })).succeeded,
    ).toBe(0);
    expect(
      (await drainOutbox(outbox, { respectBackoff: true, now: new Date(due) })).succeeded,
    ).toBe(1);
    expect(handled).toEqual(['o1']);
  });

  it('drainOutbox never skips a NotYet: the row waits for its time, which now can move to', async () => {
    const until = new Date(Date.now() + 2 * 86_400_000);
    let deferred = false;
    const { config, handled } = shop(() => {
      if (!deferred) {
        deferred = true;
        throw new NotYet(until);
      }
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('shop.OrderPlaced', placed('o1'));
    expect(await drainOutbox(outbox)).toMatchObject({ pending: 1, succeeded: 0 });
    expect((await drainOutbox(outbox)).succeeded).toBe(0);
    expect((await drainOutbox(outbox, { now: new Date(until.getTime() - 1) })).succeeded).toBe(0);
    expect((await drainOutbox(outbox, { now: until })).succeeded).toBe(1);
    expect(handled).toEqual(['o1']);
  });

  it('a row answered with NotYet is attempted at most once per drain, even when now is past its new time', async () => {
    let calls = 0;
    const { config } = shop(() => {
      calls += 1;
      throw new NotYet(new Date(Date.now() + 3_600_000));
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('shop.OrderPlaced', placed('o1'));
    const counts = await drainOutbox(outbox, { now: new Date(Date.now() + 86_400_000) });
    expect(counts.pending).toBe(1);
    expect(calls).toBe(1);
    expect((await rowsOf(outbox, 'mail.confirm'))[0]).toMatchObject({
      status: 'pending',
      attempts: 0,
    });
  });

  it('drainOutbox with a limit delivers at most that many', async () => {
    const { config, handled } = shop();
    const outbox = await openOutbox(db, config);
    for (let i = 1; i <= 5; i++) await outbox.fire('shop.OrderPlaced', placed(`o${i}`));
    expect((await drainOutbox(outbox, { limit: 2 })).succeeded).toBe(2);
    expect(handled).toEqual(['o1', 'o2']);
    expect((await rowsOf(outbox, 'mail.confirm')).map((r) => r.status)).toEqual([
      'succeeded',
      'succeeded',
      'pending',
      'pending',
      'pending',
    ]);
    expect((await drainOutbox(outbox)).succeeded).toBe(3);
  });

  it('drainOutbox runs the same claim → decode → deliver → acknowledge path as the relay', async () => {
    const seen: unknown[] = [];
    const config = defineOutbox({
      events: { 'shop.OrderPlaced': OrderPlaced },
      receivers: {
        'mail.confirm': receiver(OrderPlaced, { handle: (e) => void seen.push(e.payload) }),
        'bus.forward': receiver('shop.OrderPlaced', { deliver: async () => {} }),
      },
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('shop.OrderPlaced', placed('o1'));
    expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 2 });
    // Decoded through the schema: the date is a Date again, not its stored text.
    expect(seen).toEqual([placed('o1')]);
    expect((await rowsOf(outbox, 'bus.forward'))[0]).toMatchObject({
      status: 'succeeded',
      attempts: 1,
    });
  });

  it('assertFired returns the decoded payloads, oldest first', async () => {
    const { config } = shop();
    const outbox = await openOutbox(db, config);
    await outbox.fire('shop.OrderPlaced', placed('o1'));
    await outbox.fire('shop.OrderPlaced', placed('o2'));
    const payloads = await assertFired(outbox, 'shop.OrderPlaced', { times: 2 });
    expect(payloads).toEqual([placed('o1'), placed('o2')]);
    expect(payloads[0].placedAt).toBeInstanceOf(Date); // typed: z.coerce.date() outputs a Date
    expect(await assertFired(outbox, 'shop.OrderPlaced')).toHaveLength(2);
  });

  it('assertFired fails on the wrong number of events with a message listing what the log holds', async () => {
    const { config } = shop();
    const outbox = await openOutbox(db, config);
    await outbox.fire('shop.OrderPlaced', placed('o1'));
    await outbox.fire('shop.Refunded', { orderId: 'o1' });
    const failure = assertFired(outbox, 'shop.OrderPlaced', { times: 2 });
    await expect(failure).rejects.toBeInstanceOf(OutboxAssertionError);
    await expect(failure).rejects.toThrow(
      'assertFired: expected 2 shop.OrderPlaced event(s), found 1: {"orderId":"o1","placedAt":"2031-05-06T07:08:09.010Z","total":10}; the log holds: 1 × shop.OrderPlaced, 1 × shop.Refunded',
    );
    // A misspelt name does not compile; an untyped caller gets the same word at run time.
    // @ts-expect-error 'shop.Refund' is not a declared event name
    await expect(assertFired(outbox, 'shop.Refund')).rejects.toThrow(
      'assertFired: "shop.Refund" is not a declared event — did you mean "shop.Refunded"?',
    );
    await expect(assertFired(outbox, 'shop.Refunded', { times: -1 })).rejects.toThrow(
      'assertFired({ times }) must be an integer ≥ 0 (got -1)',
    );
  });

  it('assertFired sees nothing for a rolled-back fire', async () => {
    const { config, handled } = shop();
    const outbox = await openOutbox(db, config);
    await db.sequelize
      .transaction(async (transaction) => {
        await outbox.fire('shop.OrderPlaced', placed('o1'), { transaction });
        throw new Error('payment declined');
      })
      .catch(() => {});
    await expect(assertFired(outbox, 'shop.OrderPlaced')).rejects.toThrow(
      'assertFired: expected at least one shop.OrderPlaced event(s), found none; the log is empty (a fire rolled back with its transaction leaves no event)',
    );
    expect(await assertFired(outbox, 'shop.OrderPlaced', { times: 0 })).toEqual([]);
    expect(Object.values(await drainOutbox(outbox)).every((n) => n === 0)).toBe(true);
    expect(handled).toEqual([]);
  });
});
