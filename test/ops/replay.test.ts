import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineOutbox,
  event,
  type Outbox,
  type OutboxConfig,
  PayloadDecodeError,
  PermanentFailure,
  RetryAfter,
  receiver,
  ValidationError,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/drain.js';
import {
  deliveryRows,
  describePostgres,
  freshPrefix,
  gate,
  openOutbox,
  T0,
  testClock,
} from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import { claimRows, rowsByKey, statuses, waitUntilBlocked } from './support.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const Placed = event({ schema: z.object({ order: z.number() }) });
const at = (ms: number) => new Date(T0.getTime() + ms);

describeEachDialect('replayEvents', (dialect) => {
  let db: TestDatabase;
  const clock = testClock();
  let prefix: string;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());
  beforeEach(() => {
    clock.set(T0);
    prefix = freshPrefix();
  });

  /** An outbox on this test's tables: configs opened in turn are one deploy after another. */
  const open = <C extends OutboxConfig>(config: C): Promise<Outbox<C>> =>
    openOutbox(db, config, { clock: clock.now, tablePrefix: prefix });

  /** One receiver that records what it ran and fails while `fail` says so. */
  function audit(options: { maxAttempts?: number } = {}) {
    const ran: number[] = [];
    const dueAts: (Date | null)[] = [];
    const state = { fail: false as false | 'permanent' };
    const declared = receiver(Placed, {
      handle: (e, ctx) => {
        if (state.fail === 'permanent') throw new PermanentFailure('gone');
        ran.push(e.payload.order);
        dueAts.push(ctx.dueAt);
      },
      maxAttempts: options.maxAttempts,
    });
    return { declared, ran, dueAts, state };
  }

  it('a settled row is reopened: pending, attempts zero, its error cleared, owed from now', async () => {
    const a = audit();
    const outbox = await open(
      defineOutbox({ events: { 'shop.Placed': Placed }, receivers: { 'shop.audit': a.declared } }),
    );
    const placed = await outbox.fire('shop.Placed', { order: 1 });
    a.state.fail = 'permanent';
    await drainOutbox(outbox);
    const [dead] = await deliveryRows(outbox);
    expect([dead.status, dead.attempts, dead.lastError]).toEqual([
      'dead',
      1,
      'PermanentFailure: gone',
    ]);

    clock.advance(30 * DAY);
    expect(await outbox.replayEvents([placed])).toEqual({ reopened: 1, added: 0, missing: [] });
    const [row] = await deliveryRows(outbox);
    expect(row).toMatchObject({
      status: 'pending',
      attempts: 0,
      lastError: null,
      completedAt: null,
      availableAt: clock.now(),
      dueAt: clock.now(),
    });
    a.state.fail = false;
    await drainOutbox(outbox);
    expect(a.ran).toEqual([1]);
    // DeliveryContext.dueAt: when it became owed, the moment the replay reopened it.
    expect(a.dueAts).toEqual([clock.now()]);
  });

  it('every settled status is reopened: succeeded, dead, orphaned and cancelled', async () => {
    const a = audit();
    const b = audit();
    const c = audit();
    const full = defineOutbox({
      events: { 'shop.Placed': Placed },
      receivers: { 'shop.a': a.declared, 'shop.b': b.declared, 'shop.c': c.declared },
    });
    const first = await open(full);
    const placed = await first.fire('shop.Placed', { order: 1 });
    await first.cancelDeliveries([placed], { receiverKey: 'shop.c' });
    b.state.fail = 'permanent';
    // A deploy without shop.a: the relay records its row orphaned.
    const without = await open(
      defineOutbox({
        events: { 'shop.Placed': Placed },
        receivers: { 'shop.b': b.declared, 'shop.c': c.declared },
      }),
    );
    await drainOutbox(without);
    expect(await statuses(first)).toEqual({
      [`${placed.sequence}:shop.a`]: 'orphaned',
      [`${placed.sequence}:shop.b`]: 'dead',
      [`${placed.sequence}:shop.c`]: 'cancelled',
    });
    // shop.a is back: the replay reopens all three.
    expect(await first.replayEvents([placed])).toEqual({ reopened: 3, added: 0, missing: [] });
    b.state.fail = false;
    await drainOutbox(first);
    expect([a.ran, b.ran, c.ran]).toEqual([[1], [1], [1]]);
    // And a succeeded row is reopened like any other.
    expect((await first.replayEvents([placed])).reopened).toBe(3);
  });

  it('a receiver with no row for the event is added, with its own max attempts', async () => {
    const a = audit();
    const b = audit({ maxAttempts: 7 });
    const before = await open(
      defineOutbox({ events: { 'shop.Placed': Placed }, receivers: { 'shop.a': a.declared } }),
    );
    const placed = await before.fire('shop.Placed', { order: 1 });
    await drainOutbox(before);
    const after = await open(
      defineOutbox({
        events: { 'shop.Placed': Placed },
        receivers: { 'shop.a': a.declared, 'shop.b': b.declared },
      }),
    );
    clock.advance(DAY);
    expect(await after.replayEvents([placed], { receiverKeys: ['shop.b'] })).toEqual({
      reopened: 0,
      added: 1,
      missing: [],
    });
    const rows = await rowsByKey(after);
    expect(rows[`${placed.sequence}:shop.a`].status).toBe('succeeded');
    expect(rows[`${placed.sequence}:shop.b`]).toMatchObject({
      status: 'pending',
      attempts: 0,
      maxAttempts: 7,
    });
    await drainOutbox(after);
    expect([a.ran, b.ran]).toEqual([[1], [1]]);
  });

  /** A receiver that defers without counting (RetryAfter counts: false) after `succeedFirst` runs. */
  function deferring(succeedFirst = 1) {
    let calls = 0;
    return receiver(Placed, {
      handle: () => {
        calls += 1;
        if (calls > succeedFirst) throw new RetryAfter(60, { counts: false, message: 'throttled' });
      },
      giveUpAfter: { days: 1 },
    });
  }

  it('a replayed old event is not dead-lettered on its first deferral', async () => {
    const outbox = await open(
      defineOutbox({ events: { 'shop.Placed': Placed }, receivers: { 'shop.sync': deferring() } }),
    );
    const placed = await outbox.fire('shop.Placed', { order: 1 });
    await drainOutbox(outbox);
    clock.advance(30 * DAY);
    expect((await outbox.replayEvents([placed])).reopened).toBe(1);
    await drainOutbox(outbox, { respectBackoff: true });
    const [row] = await deliveryRows(outbox);
    // Owed since the replay, not since the event a month ago: a deferral, not a dead letter.
    expect([row.status, row.attempts, row.dueAt]).toEqual(['failed', 0, clock.now()]);
  });

  it('a row a replay adds is owed from the replay too', async () => {
    const before = await open(defineOutbox({ events: { 'shop.Placed': Placed }, receivers: {} }));
    const placed = await before.fire('shop.Placed', { order: 1 });
    const after = await open(
      defineOutbox({
        events: { 'shop.Placed': Placed },
        receivers: { 'shop.sync': deferring(0) },
      }),
    );
    clock.advance(30 * DAY);
    expect(await after.replayEvents([placed])).toEqual({ reopened: 0, added: 1, missing: [] });
    const [added] = await deliveryRows(after);
    expect([added.availableAt, added.dueAt]).toEqual([clock.now(), clock.now()]);
    // Its first run defers: owed since the replay, so a deferral rather than a dead letter.
    await drainOutbox(after, { respectBackoff: true });
    const [row] = await deliveryRows(after);
    expect([row.status, row.attempts]).toEqual(['failed', 0]);
  });

  it('claimed rows are left alone, and rows still owed are not reopened', async () => {
    const a = audit();
    const b = audit();
    const outbox = await open(
      defineOutbox({
        events: { 'shop.Placed': Placed },
        receivers: { 'shop.a': a.declared, 'shop.b': b.declared },
      }),
    );
    const placed = await outbox.fire('shop.Placed', { order: 1 });
    const claim = await claimRows(outbox, { receiverKeys: ['shop.a'] });
    expect(claim.rows).toHaveLength(1);
    expect(await outbox.replayEvents([placed])).toEqual({ reopened: 0, added: 0, missing: [] });
    const rows = await rowsByKey(outbox);
    expect(rows[`${placed.sequence}:shop.a`]).toMatchObject({
      status: 'claimed',
      claimedBy: 'test-worker',
    });
    expect(rows[`${placed.sequence}:shop.b`].status).toBe('pending');
  });

  it('it can be narrowed to receivers', async () => {
    const a = audit();
    const b = audit();
    const outbox = await open(
      defineOutbox({
        events: { 'shop.Placed': Placed },
        receivers: { 'shop.a': a.declared, 'shop.b': b.declared },
      }),
    );
    const placed = await outbox.fire('shop.Placed', { order: 1 });
    await drainOutbox(outbox);
    expect(await outbox.replayEvents([placed], { receiverKeys: ['shop.b'] })).toEqual({
      reopened: 1,
      added: 0,
      missing: [],
    });
    expect(await statuses(outbox)).toEqual({
      [`${placed.sequence}:shop.a`]: 'succeeded',
      [`${placed.sequence}:shop.b`]: 'pending',
    });
    expect(await outbox.replayEvents([placed], { receiverKeys: [] })).toEqual({
      reopened: 0,
      added: 0,
      missing: [],
    });
  });

  it('a scheduled receiver has its due time resolved again: a time still ahead is kept, one past is owed from the replay', async () => {
    const Offer = event({ schema: z.object({ expiresAt: z.string() }) });
    const expire = receiver(Offer, {
      handle: () => {},
      due: (e) => new Date(e.payload.expiresAt),
    });
    const before = await open(defineOutbox({ events: { 'shop.Offer': Offer }, receivers: {} }));
    const open72 = await before.fire('shop.Offer', { expiresAt: at(72 * HOUR).toISOString() });
    const past = await before.fire('shop.Offer', { expiresAt: at(HOUR).toISOString() });
    // Replay adopts the scheduled receiver: declare the expiry, replay the recent offers.
    const after = await open(
      defineOutbox({ events: { 'shop.Offer': Offer }, receivers: { 'shop.expire': expire } }),
    );
    clock.advance(2 * HOUR);
    expect(await after.replayEvents([open72, past])).toEqual({
      reopened: 0,
      added: 2,
      missing: [],
    });
    const rows = await rowsByKey(after);
    expect(rows[`${open72.sequence}:shop.expire`]).toMatchObject({
      availableAt: at(72 * HOUR),
      dueAt: at(72 * HOUR),
    });
    expect(rows[`${past.sequence}:shop.expire`]).toMatchObject({
      availableAt: clock.now(),
      dueAt: clock.now(),
    });
    // A delay is counted from the event's occurredAt again, too.
    const delayed = await open(
      defineOutbox({
        events: { 'shop.Offer': Offer },
        receivers: { 'shop.expire': receiver(Offer, { handle: () => {}, due: { hours: 48 } }) },
      }),
    );
    await drainOutbox(delayed, { now: at(100 * HOUR) });
    expect((await delayed.replayEvents([open72])).reopened).toBe(1);
    expect((await rowsByKey(delayed))[`${open72.sequence}:shop.expire`].dueAt).toEqual(
      at(48 * HOUR),
    );
  });

  it('a due function is called again and raises to the caller on the same terms as at fire time', async () => {
    const Offer = event({ schema: z.object({ expiresAt: z.string() }) });
    const before = await open(defineOutbox({ events: { 'shop.Offer': Offer }, receivers: {} }));
    const offer = await before.fire('shop.Offer', { expiresAt: 'soon' });
    const after = await open(
      defineOutbox({
        events: { 'shop.Offer': Offer },
        receivers: {
          'shop.expire': receiver(Offer, {
            handle: () => {},
            due: (e) => new Date(e.payload.expiresAt),
          }),
        },
      }),
    );
    await expect(after.replayEvents([offer])).rejects.toThrowErrorMatchingInlineSnapshot(
      `[ValidationError: replayEvents(): receiver shop.expire's due for shop.Offer returned an invalid Date; it must return a valid Date]`,
    );
    expect(await deliveryRows(after)).toEqual([]);
  });

  it('a fan-out receiver replays to the targets it returns now: still returned reopened or added, no longer returned left alone', async () => {
    const targets = { now: ['a', 'b'] };
    const config = defineOutbox({
      events: { 'shop.Placed': Placed },
      receivers: {
        'shop.hooks': receiver(Placed, { handle: () => {}, targets: () => targets.now }),
      },
    });
    const outbox = await open(config);
    const placed = await outbox.fire('shop.Placed', { order: 1 });
    await drainOutbox(outbox);
    targets.now = ['b', 'c'];
    expect(await outbox.replayEvents([placed])).toEqual({ reopened: 1, added: 1, missing: [] });
    expect(await statuses(outbox)).toEqual({
      [`${placed.sequence}:shop.hooks→a`]: 'succeeded',
      [`${placed.sequence}:shop.hooks→b`]: 'pending',
      [`${placed.sequence}:shop.hooks→c`]: 'pending',
    });
  });

  it('a blank-target row written before the receiver gained targets is left alone', async () => {
    const before = await open(
      defineOutbox({
        events: { 'shop.Placed': Placed },
        receivers: { 'shop.hooks': receiver(Placed, { handle: () => {} }) },
      }),
    );
    const placed = await before.fire('shop.Placed', { order: 1 });
    await drainOutbox(before);
    const after = await open(
      defineOutbox({
        events: { 'shop.Placed': Placed },
        receivers: {
          'shop.hooks': receiver(Placed, { handle: () => {}, targets: () => ['partner'] }),
        },
      }),
    );
    expect(await after.replayEvents([placed])).toEqual({ reopened: 0, added: 1, missing: [] });
    expect(await statuses(after)).toEqual({
      [`${placed.sequence}:shop.hooks`]: 'succeeded',
      [`${placed.sequence}:shop.hooks→partner`]: 'pending',
    });
  });

  it('a fan-out receiver’s replay raises on a payload that no longer decodes; a plain receiver’s row is reopened', async () => {
    const before = await open(
      defineOutbox({
        events: { 'shop.Placed': Placed },
        receivers: {
          'shop.hooks': receiver(Placed, { handle: () => {}, targets: () => ['partner'] }),
          'shop.audit': receiver(Placed, { handle: () => {} }),
        },
      }),
    );
    const placed = await before.fire('shop.Placed', { order: 1 });
    await drainOutbox(before);
    // A breaking change: order is a string now.
    const Changed = event({ schema: z.object({ order: z.string() }) });
    const fanOut = await open(
      defineOutbox({
        events: { 'shop.Placed': Changed },
        receivers: {
          'shop.hooks': receiver(Changed, { handle: () => {}, targets: () => ['partner'] }),
          'shop.audit': receiver(Changed, { handle: () => {} }),
        },
      }),
    );
    await expect(fanOut.replayEvents([placed])).rejects.toThrow(PayloadDecodeError);
    // Nothing was replayed: the whole replay rolled back.
    expect(Object.values(await statuses(fanOut))).toEqual(['succeeded', 'succeeded']);
    expect(await fanOut.replayEvents([placed], { receiverKeys: ['shop.audit'] })).toEqual({
      reopened: 1,
      added: 0,
      missing: [],
    });
  });

  it('a targets function that throws raises to the caller and replays nothing', async () => {
    const state = { fail: false };
    const outbox = await open(
      defineOutbox({
        events: { 'shop.Placed': Placed },
        receivers: {
          'shop.audit': receiver(Placed, { handle: () => {} }),
          'shop.hooks': receiver(Placed, {
            handle: () => {},
            targets: () => {
              if (state.fail) throw new Error('the partner registry is down');
              return ['partner'];
            },
          }),
        },
      }),
    );
    const placed = await outbox.fire('shop.Placed', { order: 1 });
    await drainOutbox(outbox);
    state.fail = true;
    await expect(outbox.replayEvents([placed])).rejects.toThrow('the partner registry is down');
    expect(Object.values(await statuses(outbox))).toEqual(['succeeded', 'succeeded']);
  });

  it('refuses an unknown receiver key or a bad id before anything is written, and reports ids that name no event', async () => {
    const a = audit();
    const outbox = await open(
      defineOutbox({ events: { 'shop.Placed': Placed }, receivers: { 'shop.audit': a.declared } }),
    );
    const placed = await outbox.fire('shop.Placed', { order: 1 });
    await drainOutbox(outbox);
    await expect(
      outbox.replayEvents([placed], { receiverKeys: ['shop.adit'] }),
    ).rejects.toThrowErrorMatchingInlineSnapshot(
      `[ValidationError: replayEvents(): receiverKeys[0] "shop.adit" is not a durable receiver of this outbox; the durable receivers are: shop.audit]`,
    );
    await expect(outbox.replayEvents(['not-a-uuid'])).rejects.toThrow(ValidationError);
    const unknown = '01900000-0000-7000-8000-00000000abcd';
    expect(await outbox.replayEvents([unknown, placed])).toEqual({
      reopened: 1,
      added: 0,
      missing: [unknown],
    });
  });
});

describePostgres('replayEvents on two connections', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('two replays of one event add its missing rows once', async () => {
    const prefix = freshPrefix();
    const before = await openOutbox(
      db,
      defineOutbox({ events: { 'shop.Placed': Placed }, receivers: {} }),
      { tablePrefix: prefix },
    );
    const placed = await before.fire('shop.Placed', { order: 1 });
    // The first replay is held inside its transaction (in the fan-out's targets).
    const hold = { calls: 0, entered: gate(), release: gate() };
    const after = await openOutbox(
      db,
      defineOutbox({
        events: { 'shop.Placed': Placed },
        receivers: {
          'shop.hooks': receiver(Placed, {
            handle: () => {},
            targets: async () => {
              hold.calls += 1;
              if (hold.calls === 1) {
                hold.entered.open();
                await hold.release.promise;
              }
              return ['partner'];
            },
          }),
        },
      }),
      { tablePrefix: prefix },
    );
    const first = after.replayEvents([placed]);
    await hold.entered.promise;
    const second = after.replayEvents([placed]);
    expect(await waitUntilBlocked(db.sequelize, db.outboxOptions.schema!)).toEqual([
      expect.stringContaining('FOR UPDATE OF e'),
    ]);
    hold.release.open();
    expect(await first).toEqual({ reopened: 0, added: 1, missing: [] });
    // The second read the rows after the first committed: the row is there, and owed.
    expect(await second).toEqual({ reopened: 0, added: 0, missing: [] });
    expect(await statuses(after)).toEqual({ [`${placed.sequence}:shop.hooks→partner`]: 'pending' });
  });
});
