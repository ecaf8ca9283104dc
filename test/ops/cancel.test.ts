import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, type Outbox, receiver, ValidationError } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/drain.js';
import {
  deliveryRows,
  describePostgres,
  freshPrefix,
  gate,
  openOutbox,
  T0,
  tableName,
  testClock,
} from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import { claimRows, statuses, waitUntilBlocked } from './support.js';

const HOUR = 3600_000;
const Placed = event({ schema: z.object({ order: z.number() }) });

/**
 * An order placed drives an immediate confirmation and an expiry due 48 hours later (the
 * scheduled case a cancel exists for); `fail` makes the confirmation fail.
 */
function shopConfig() {
  const ran: string[] = [];
  const state = { fail: false };
  const config = defineOutbox({
    events: { 'shop.Placed': Placed },
    receivers: {
      'shop.confirm': receiver(Placed, {
        handle: (e) => {
          if (state.fail) throw new Error(`confirmation ${e.payload.order} refused`);
          ran.push(`confirm ${e.payload.order}`);
        },
      }),
      'shop.expire': receiver(Placed, {
        handle: (e) => void ran.push(`expire ${e.payload.order}`),
        due: { hours: 48 },
      }),
    },
  });
  return { config, ran, state };
}

describeEachDialect('cancelDeliveries', (dialect) => {
  let db: TestDatabase;
  const clock = testClock();
  let shop: ReturnType<typeof shopConfig>;
  let outbox: Outbox<ReturnType<typeof shopConfig>['config']>;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());
  beforeEach(async () => {
    clock.set(T0);
    shop = shopConfig();
    outbox = await openOutbox(db, shop.config, { clock: clock.now });
  });

  const place = (order: number) => outbox.fire('shop.Placed', { order });

  it('unclaimed rows are settled and never run', async () => {
    const placed = await place(1);
    clock.advance(HOUR);
    expect(await outbox.cancelDeliveries([placed])).toEqual({
      cancelled: 2,
      inFlight: 0,
      missing: [],
    });
    const rows = await deliveryRows(outbox);
    expect(rows.map((r) => [r.receiverKey, r.status])).toEqual([
      ['shop.confirm', 'cancelled'],
      ['shop.expire', 'cancelled'],
    ]);
    // Completed now; nothing else touched: the due time, the attempts, the error.
    for (const r of rows) {
      expect(r.completedAt).toEqual(clock.now());
      expect([r.attempts, r.lastError, r.succeededAt]).toEqual([0, null, null]);
    }
    expect(rows[1].dueAt).toEqual(new Date(T0.getTime() + 48 * HOUR));
    expect(rows[1].availableAt).toEqual(new Date(T0.getTime() + 48 * HOUR));

    await drainOutbox(outbox, { now: new Date(T0.getTime() + 72 * HOUR) });
    expect(shop.ran).toEqual([]);
    expect(await outbox.countDeliveries()).toMatchObject({ cancelled: 2, succeeded: 0 });
  });

  it('a failed row awaiting its retry is cancelled too', async () => {
    const placed = await place(1);
    shop.state.fail = true;
    await drainOutbox(outbox, { respectBackoff: true });
    const [failed] = await deliveryRows(outbox);
    expect([failed.status, failed.attempts]).toEqual(['failed', 1]);
    expect(failed.availableAt.getTime()).toBeGreaterThan(clock.now().getTime());

    expect(await outbox.cancelDeliveries([placed.id], { receiverKey: 'shop.confirm' })).toEqual({
      cancelled: 1,
      inFlight: 0,
      missing: [],
    });
    const [cancelled] = await deliveryRows(outbox);
    expect(cancelled.status).toBe('cancelled');
    // Its attempts and its last error are its history: kept.
    expect([cancelled.attempts, cancelled.lastError]).toEqual([1, failed.lastError]);
    shop.state.fail = false;
    await drainOutbox(outbox, { now: new Date(T0.getTime() + 24 * HOUR) });
    expect(shop.ran).toEqual([]);
  });

  it('only the named events are touched', async () => {
    const one = await place(1);
    await place(2);
    expect((await outbox.cancelDeliveries([one])).cancelled).toBe(2);
    expect(await statuses(outbox)).toEqual({
      [`${one.sequence}:shop.confirm`]: 'cancelled',
      [`${one.sequence}:shop.expire`]: 'cancelled',
      [`${Number(one.sequence) + 1}:shop.confirm`]: 'pending',
      [`${Number(one.sequence) + 1}:shop.expire`]: 'pending',
    });
  });

  it('it can be narrowed to one receiver', async () => {
    const placed = await place(1);
    expect(await outbox.cancelDeliveries([placed], { receiverKey: 'shop.expire' })).toEqual({
      cancelled: 1,
      inFlight: 0,
      missing: [],
    });
    expect(await statuses(outbox)).toEqual({
      [`${placed.sequence}:shop.confirm`]: 'pending',
      [`${placed.sequence}:shop.expire`]: 'cancelled',
    });
    await drainOutbox(outbox, { now: new Date(T0.getTime() + 72 * HOUR) });
    expect(shop.ran).toEqual(['confirm 1']);
  });

  it('it can be narrowed to named rows', async () => {
    const placed = await place(1);
    const [, expire] = await deliveryRows(outbox);
    expect(await outbox.cancelDeliveries([placed], { deliveryIds: [expire.id] })).toEqual({
      cancelled: 1,
      inFlight: 0,
      missing: [],
    });
    expect(await statuses(outbox)).toEqual({
      [`${placed.sequence}:shop.confirm`]: 'pending',
      [`${placed.sequence}:shop.expire`]: 'cancelled',
    });
  });

  it('a named row of an event not named is left alone', async () => {
    const one = await place(1);
    await place(2);
    const other = (await deliveryRows(outbox)).filter((r) => r.eventSequence !== one.sequence);
    expect(
      await outbox.cancelDeliveries([one], { deliveryIds: other.map((r) => Number(r.id)) }),
    ).toEqual({ cancelled: 0, inFlight: 0, missing: [] });
    expect(Object.values(await statuses(outbox))).toEqual([
      'pending',
      'pending',
      'pending',
      'pending',
    ]);
  });

  it('an empty row list cancels nothing', async () => {
    const placed = await place(1);
    expect(await outbox.cancelDeliveries([placed], { deliveryIds: [] })).toEqual({
      cancelled: 0,
      inFlight: 0,
      missing: [],
    });
    expect(Object.values(await statuses(outbox))).toEqual(['pending', 'pending']);
  });

  it('it will not cancel a row claimed after the lock', async () => {
    const placed = await place(1);
    const store = runtimeOf(outbox).store;
    let claimedRows = 0;
    if (dialect.name === 'postgres') {
      // The claim takes no event lock: a worker claims the confirmation after the cancel
      // locked the event and before its write, which must then skip the row.
      await db.sequelize.transaction(async (transaction) => {
        await store.lockEvents({ uuids: [placed.id] }, transaction);
        claimedRows = (await claimRows(outbox)).rows.length;
        expect(await outbox.cancelDeliveries([placed], { transaction })).toEqual({
          cancelled: 1,
          inFlight: 1,
          missing: [],
        });
      });
    } else {
      // SQLite: the cancel's transaction is the one writer, so no claim can land between
      // its lock and its write; a claim that committed first is what the write must skip.
      claimedRows = (await claimRows(outbox)).rows.length;
      expect(await outbox.cancelDeliveries([placed])).toEqual({
        cancelled: 1,
        inFlight: 1,
        missing: [],
      });
    }
    expect(claimedRows).toBe(1);
    expect(await statuses(outbox)).toEqual({
      [`${placed.sequence}:shop.confirm`]: 'claimed',
      [`${placed.sequence}:shop.expire`]: 'cancelled',
    });
  });

  it('a settled row keeps its outcome', async () => {
    const placed = await place(1);
    await drainOutbox(outbox, { now: new Date(T0.getTime() + 49 * HOUR) });
    expect([...shop.ran].sort()).toEqual(['confirm 1', 'expire 1']);
    expect(await outbox.cancelDeliveries([placed])).toEqual({
      cancelled: 0,
      inFlight: 0,
      missing: [],
    });
    expect(Object.values(await statuses(outbox))).toEqual(['succeeded', 'succeeded']);
    const again = await outbox.cancelDeliveries([placed], { receiverKey: 'shop.expire' });
    expect(again.cancelled).toBe(0);
  });

  it('a dead letter is not withdrawn: it stays for someone to read or requeue', async () => {
    const placed = await place(1);
    shop.state.fail = true;
    await drainOutbox(outbox); // retried at once until its budget is spent
    expect(await outbox.cancelDeliveries([placed], { receiverKey: 'shop.confirm' })).toEqual({
      cancelled: 0,
      inFlight: 0,
      missing: [],
    });
    expect(await statuses(outbox)).toEqual({
      [`${placed.sequence}:shop.confirm`]: 'dead',
      [`${placed.sequence}:shop.expire`]: 'pending',
    });
    expect(await outbox.deadLetters()).toHaveLength(1);
  });

  it('it joins the caller’s transaction: it commits with the change, or not at all', async () => {
    const placed = await place(1);
    await expect(
      db.sequelize.transaction(async (transaction) => {
        expect((await outbox.cancelDeliveries([placed], { transaction })).cancelled).toBe(2);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(Object.values(await statuses(outbox))).toEqual(['pending', 'pending']);

    await db.sequelize.transaction(async (transaction) => {
      await outbox.cancelDeliveries([placed], { transaction, receiverKey: 'shop.expire' });
    });
    expect(Object.values(await statuses(outbox))).toEqual(['pending', 'cancelled']);
  });

  it('takes event ids or the events themselves, and reports ids that name no event', async () => {
    const one = await place(1);
    const two = await place(2);
    const unknown = '01900000-0000-7000-8000-000000000000';
    expect(await outbox.cancelDeliveries([one, two.id.toUpperCase(), unknown])).toEqual({
      cancelled: 4,
      inFlight: 0,
      missing: [unknown],
    });
  });

  it('refuses what is no event id before anything is written', async () => {
    const placed = await place(1);
    await expect(outbox.cancelDeliveries([placed, 42 as never])).rejects.toThrow(ValidationError);
    await expect(outbox.cancelDeliveries([placed, 'order-7'])).rejects.toThrowError(
      /eventIds\[1\] must be an event's id .*got "order-7"/,
    );
    await expect(outbox.cancelDeliveries(placed.id as never)).rejects.toThrowError(
      /takes an array of events .* wrap it/,
    );
    await expect(outbox.cancelDeliveries([placed], { deliveryIds: ['x1'] })).rejects.toThrowError(
      /deliveryIds\[0\] must be a delivery id/,
    );
    expect(Object.values(await statuses(outbox))).toEqual(['pending', 'pending']);
  });
});

describePostgres('cancelDeliveries on two connections', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('a cancel issued during a replay is not overtaken by it', async () => {
    // A fan-out receiver whose targets function the test holds, so the replay stays open
    // (its event locked) while the cancel is issued.
    const hold = { on: false, entered: gate(), release: gate() };
    const config = defineOutbox({
      events: { 'shop.Placed': Placed },
      receivers: {
        'shop.hooks': receiver(Placed, {
          handle: () => {},
          targets: async () => {
            if (hold.on) {
              hold.entered.open();
              await hold.release.promise;
            }
            return ['partner'];
          },
        }),
      },
    });
    const outbox = await openOutbox(db, config);
    const placed = await outbox.fire('shop.Placed', { order: 1 });
    await drainOutbox(outbox);
    expect(Object.values(await statuses(outbox))).toEqual(['succeeded']);

    hold.on = true;
    const replay = outbox.replayEvents([placed]);
    await hold.entered.promise;
    const cancel = outbox.cancelDeliveries([placed]);
    expect(await waitUntilBlocked(db.sequelize, db.outboxOptions.schema!)).toEqual([
      expect.stringContaining('FOR UPDATE OF e'),
    ]);
    hold.release.open();
    expect(await replay).toEqual({ reopened: 1, added: 0, missing: [] });
    // The cancel waited for the replay's commit, then withdrew what it reopened.
    expect(await cancel).toEqual({ cancelled: 1, inFlight: 0, missing: [] });
    expect(Object.values(await statuses(outbox))).toEqual(['cancelled']);
  });

  it('a cancel waits for a claim in flight and leaves the row claimed', async () => {
    const { config } = shopConfig();
    const prefix = freshPrefix();
    const outbox = await openOutbox(db, config, { tablePrefix: prefix });
    const placed = await outbox.fire('shop.Placed', { order: 1 });
    const [confirm] = await deliveryRows(outbox);
    // A worker's claim, on a connection of its own, not yet committed: the claim's own
    // write (status, worker, claim time, lease) holding the row's lock.
    const worker = db.connectAgain();
    const claim = await worker.transaction();
    const deliveries = tableName(db, `${prefix}deliveries`);
    await worker.query(
      `UPDATE ${deliveries} SET status = 'claimed', claimed_by = 'w', claimed_at = now(), lease_until = now() + interval '1 minute'
       WHERE id = $1 AND status IN ('pending', 'failed')`,
      { bind: [confirm.id], transaction: claim },
    );
    const cancel = outbox.cancelDeliveries([placed], { receiverKey: 'shop.confirm' });
    await waitUntilBlocked(db.sequelize, db.outboxOptions.schema!);
    await claim.commit();
    expect(await cancel).toEqual({ cancelled: 0, inFlight: 1, missing: [] });
    const [after] = await deliveryRows(outbox);
    expect([after.status, after.claimedBy]).toEqual(['claimed', 'w']);
  });

  it('the events are locked before their rows are written (two callers locking overlapping events in opposite order queue rather than deadlock)', async () => {
    const { config } = shopConfig();
    const outbox = await openOutbox(db, config);
    const e1 = await outbox.fire('shop.Placed', { order: 1 });
    const e2 = await outbox.fire('shop.Placed', { order: 2 });
    const a = await db.sequelize.transaction();
    const b = await db.sequelize.transaction();
    try {
      // A holds e1. B asks for e2 then e1: it takes e1 first (primary-key order), so it
      // waits there holding nothing, and has written none of e2's rows.
      expect((await outbox.cancelDeliveries([e1], { transaction: a })).cancelled).toBe(2);
      const second = outbox.cancelDeliveries([e2, e1], { transaction: b });
      // It waits at the event lock, before any row write.
      const waiting = await waitUntilBlocked(db.sequelize, db.outboxOptions.schema!);
      expect(waiting).toEqual([expect.stringContaining('FOR UPDATE OF e')]);
      // A can still take e2: B did not lock it first, so nobody deadlocks.
      expect((await outbox.cancelDeliveries([e2], { transaction: a })).cancelled).toBe(2);
      await a.commit();
      expect(await second).toEqual({ cancelled: 0, inFlight: 0, missing: [] });
      await b.commit();
    } catch (error) {
      await Promise.allSettled([a.rollback(), b.rollback()]);
      throw error;
    }
    expect(Object.values(await statuses(outbox))).toEqual([
      'cancelled',
      'cancelled',
      'cancelled',
      'cancelled',
    ]);
  });
});
