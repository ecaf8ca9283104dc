import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineOutbox,
  event,
  type Outbox,
  PermanentFailure,
  receiver,
  ValidationError,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox, rowsOf, T0, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const at = (ms: number) => new Date(T0.getTime() + ms);

describeEachDialect('outbox.health()', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const OrderPlaced = event({ schema: z.object({ orderId: z.string() }) });

  /**
   * mail.send delivers; billing.charge fails (retried); audit.record dead-letters at once;
   * offers.expire is due an hour after the order and fails when it runs.
   */
  const config = defineOutbox({
    events: { 'shop.OrderPlaced': OrderPlaced },
    receivers: {
      'mail.send': receiver(OrderPlaced, { handle: () => {} }),
      'billing.charge': receiver(OrderPlaced, {
        handle: () => {
          throw new Error('card declined');
        },
      }),
      'audit.record': receiver(OrderPlaced, {
        handle: () => {
          throw new PermanentFailure('audit store refuses it');
        },
      }),
      'offers.expire': receiver(OrderPlaced, {
        due: { hours: 1 },
        handle: () => {
          throw new Error('offers service down');
        },
      }),
      'log.inline': receiver(OrderPlaced, { mode: 'inline', handle: () => {} }),
    },
  });

  async function setup() {
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    return { clock, outbox };
  }

  const backlogOf = async (outbox: Outbox, now: Date, key: string) =>
    (await outbox.health({ now })).receivers.find((r) => r.receiverKey === key);

  it('an empty outbox owes nothing and lists no receiver', async () => {
    const { outbox } = await setup();
    expect(await outbox.health({ now: T0 })).toEqual({
      at: T0,
      owed: 0,
      oldestOwedAt: null,
      lapsedLeases: 0,
      claimed: 0,
      scheduled: 0,
      dead: 0,
      receivers: [],
    });
  });

  it('a pending row is owed from its event’s record time; a scheduled row is not owed and not aged', async () => {
    const { outbox } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    const health = await outbox.health({ now: at(10 * MINUTE) });
    // mail, billing and audit owe it now; offers.expire only in an hour
    expect(health).toMatchObject({ owed: 3, scheduled: 1, oldestOwedAt: T0, claimed: 0, dead: 0 });
    expect(await backlogOf(outbox, at(10 * MINUTE), 'offers.expire')).toEqual({
      receiverKey: 'offers.expire',
      owed: 0,
      oldestOwedAt: null,
      scheduled: 1,
      claimed: 0,
      dead: 0,
    });
  });

  it('a scheduled row becomes owed at its due time and ages from it, not from its event', async () => {
    const { outbox } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    const later = at(3 * HOUR);
    expect(await backlogOf(outbox, later, 'offers.expire')).toMatchObject({
      owed: 1,
      scheduled: 0,
      oldestOwedAt: at(HOUR),
    });
    expect((await outbox.health({ now: later })).scheduled).toBe(0);
  });

  it('a failing row ages from its due time, not from available_at', async () => {
    const { clock, outbox } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    clock.set(at(2 * HOUR));
    await outbox.deliverPending({ now: at(2 * HOUR) });
    const [offer] = await rowsOf(outbox, 'offers.expire');
    const [charge] = await rowsOf(outbox, 'billing.charge');
    // both failed, their next attempt pushed ahead by the backoff
    expect(offer).toMatchObject({ status: 'failed', dueAt: at(HOUR) });
    expect(charge.status).toBe('failed');
    expect(offer.availableAt.getTime()).toBeGreaterThan(at(2 * HOUR).getTime());
    expect(charge.availableAt.getTime()).toBeGreaterThan(at(2 * HOUR).getTime());

    const now = at(2 * HOUR);
    // still owed inside its backoff (owed is a superset of what can be claimed now)
    expect(await backlogOf(outbox, now, 'offers.expire')).toMatchObject({
      owed: 1,
      oldestOwedAt: at(HOUR),
    });
    // a row without a due time ages from its event's record time
    expect(await backlogOf(outbox, now, 'billing.charge')).toMatchObject({
      owed: 1,
      oldestOwedAt: T0,
    });
    expect((await outbox.health({ now })).oldestOwedAt).toEqual(T0);
  });

  it('dead letters are counted apart from owed, and settled rows not at all', async () => {
    const { clock, outbox } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    await outbox.fire('shop.OrderPlaced', { orderId: 'o2' });
    clock.set(at(MINUTE));
    await outbox.deliverPending({ now: at(MINUTE) });
    const health = await outbox.health({ now: at(MINUTE) });
    // mail.send succeeded twice (not counted), audit.record dead twice, billing failed twice
    expect(health).toMatchObject({ owed: 2, dead: 2, scheduled: 2, claimed: 0 });
    expect(health.receivers.find((r) => r.receiverKey === 'mail.send')).toBeUndefined();
    expect(health.receivers.find((r) => r.receiverKey === 'audit.record')).toEqual({
      receiverKey: 'audit.record',
      owed: 0,
      oldestOwedAt: null,
      scheduled: 0,
      claimed: 0,
      dead: 2,
    });
  });

  it('claimed rows are owed and counted claimed; a claim past its lease is a lapsed lease', async () => {
    const { outbox } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    const store = runtimeOf(outbox).store;
    const claimed = await store.claim({
      token: { workerId: 'w1', claimedAt: T0 },
      now: T0,
      leaseUntil: at(MINUTE),
      limit: 10,
      receiverKeys: ['mail.send', 'billing.charge'],
    });
    expect(claimed).toHaveLength(2);

    const inLease = await outbox.health({ now: at(30_000) });
    expect(inLease).toMatchObject({ owed: 3, claimed: 2, lapsedLeases: 0 });
    expect(inLease.receivers.find((r) => r.receiverKey === 'mail.send')).toMatchObject({
      owed: 1,
      claimed: 1,
    });

    const lapsed = await outbox.health({ now: at(2 * MINUTE) });
    expect(lapsed).toMatchObject({ owed: 3, claimed: 2, lapsedLeases: 2, oldestOwedAt: T0 });
  });

  it('lists only receivers with something owed, dead or scheduled, worst backlog first', async () => {
    const { clock, outbox } = await setup();
    for (const orderId of ['o1', 'o2', 'o3']) await outbox.fire('shop.OrderPlaced', { orderId });
    await outbox.fire('shop.OrderPlaced', { orderId: 'o4' });
    clock.set(at(MINUTE));
    // mail.send delivers all four; billing keeps four owed; audit dead-letters four
    await outbox.deliverPending({ now: at(MINUTE) });
    // one more order: billing and audit owe one more each, mail.send one
    await outbox.fire('shop.OrderPlaced', { orderId: 'o5' });
    const rows = (await outbox.health({ now: at(MINUTE) })).receivers;
    expect(rows.map((r) => [r.receiverKey, r.owed, r.dead, r.scheduled])).toEqual([
      ['billing.charge', 5, 0, 0], // the most owed
      ['audit.record', 1, 4, 0], // owes one since o5, as mail.send does: the more dead first
      ['mail.send', 1, 0, 0],
      ['offers.expire', 0, 0, 5], // only scheduled
    ]);
  });

  it('breaks a tie in owed by the oldest owed', async () => {
    const { clock, outbox } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    // at two hours, offers.expire (due at one hour) and billing.charge (recorded at T0) owe one each
    clock.set(at(2 * HOUR));
    const now = at(2 * HOUR);
    const keys = (await outbox.health({ now })).receivers.map((r) => r.receiverKey);
    // mail.send, billing.charge and audit.record owe one since T0 (by key), offers.expire since 1h
    expect(keys).toEqual(['audit.record', 'billing.charge', 'mail.send', 'offers.expire']);
  });

  it('reads the outbox’s clock when no now is given', async () => {
    const { clock, outbox } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    clock.set(at(2 * HOUR));
    const health = await outbox.health();
    expect(health.at).toEqual(at(2 * HOUR));
    expect(health).toMatchObject({ owed: 4, scheduled: 0 });
  });

  it('refuses a now that is not a valid Date, naming it', async () => {
    const { outbox } = await setup();
    await expect(outbox.health({ now: new Date(Number.NaN) })).rejects.toThrow(ValidationError);
    await expect(
      outbox.health({ now: '2031-01-01' as unknown as Date }),
    ).rejects.toThrowErrorMatchingInlineSnapshot(
      `[ValidationError: outbox.health({ now }) must be a valid Date (got "2031-01-01")]`,
    );
  });
});
