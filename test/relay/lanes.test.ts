import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  type DeliveryContext,
  defineOutbox,
  event,
  NotYet,
  type Outbox,
  type OutboxEvent,
  receiver,
} from '../../src/index.js';
import { claimBatch } from '../../src/relay/claim.js';
import { claimLeaseSeconds } from '../../src/relay/claim-lease.js';
import { type LaneClaim, laneClaimOf, laneKeyFilter } from '../../src/relay/lanes.js';
import { runtimeOf } from '../../src/runtime.js';
import { claimShape, isUnfiltered } from '../../src/storage/sql/claim-filter.js';
import type { ClaimOptions } from '../../src/storage/store.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/drain.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  createReceivedTable,
  describeSplittingDialects,
  freshPrefix,
  openOutbox,
  receivedIds,
  rowsOf,
  shortSleep,
  T0,
  testClock,
} from './support.js';

const Send = event({ schema: z.object({ n: z.number() }) });
const Placed = event({ schema: z.object({ n: z.number() }) });

/**
 * Mail receivers in lane `mail` (both declaring a 20 s lease), a shop receiver in the
 * default lane; each logs `key:n`. `moved` puts shop.audit in lane `slow` instead;
 * `without` leaves a receiver out (deleted since its rows were written).
 */
function lanesConfig(options: { moved?: boolean; without?: string } = {}) {
  const seen: string[] = [];
  const log = (key: string) => (e: { payload: { n: number } }) =>
    void seen.push(`${key}:${e.payload.n}`);
  const receivers = {
    'mail.smtp': receiver(Send, { handle: log('mail.smtp'), lane: 'mail', leaseSeconds: 20 }),
    'mail.sms': receiver(Send, { handle: log('mail.sms'), lane: 'mail', leaseSeconds: 20 }),
    'shop.audit': receiver(Placed, {
      handle: log('shop.audit'),
      ...(options.moved ? { lane: 'slow' } : {}),
    }),
  };
  if (options.without) delete (receivers as Record<string, unknown>)[options.without];
  const config = defineOutbox({
    events: { 'mail.Send': Send, 'shop.Placed': Placed },
    receivers,
    settings: { leaseSeconds: 60 },
  });
  return { config, seen };
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

describeEachDialect('relay: lanes', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  async function fired(config: ReturnType<typeof lanesConfig>['config'], extra = {}) {
    const outbox = await openOutbox(db, config, { clock: () => T0, ...extra });
    await outbox.fire('mail.Send', { n: 1 });
    await outbox.fire('shop.Placed', { n: 1 });
    return outbox;
  }

  it('a relay started without a lane serves the default lane and leaves the named lanes alone', async () => {
    const { config, seen } = lanesConfig();
    const outbox = await fired(config);
    const report = await outbox.runRelay({ untilIdle: true, sleep: shortSleep() });
    expect(seen).toEqual(['shop.audit:1']);
    expect(report.succeeded).toBe(1);
    expect((await rowsOf(outbox, 'mail.smtp')).map((r) => r.status)).toEqual(['pending']);
  });

  it("a relay of a named lane claims only its receivers' rows", async () => {
    const { config, seen } = lanesConfig();
    const outbox = await fired(config);
    await outbox.runRelay({ lane: 'mail', untilIdle: true, concurrency: 1, sleep: shortSleep() });
    expect(seen).toEqual(['mail.smtp:1', 'mail.sms:1'].sort());
    expect((await rowsOf(outbox, 'shop.audit')).map((r) => r.status)).toEqual(['pending']);
  });

  it('lane: null serves every lane, and excludeLanes leaves lanes out', async () => {
    const { config, seen } = lanesConfig();
    const outbox = await fired(config);
    await outbox.runRelay({
      lane: null,
      excludeLanes: ['default'],
      untilIdle: true,
      concurrency: 1,
      sleep: shortSleep(),
    });
    expect([...seen].sort()).toEqual(['mail.sms:1', 'mail.smtp:1']);
    await outbox.runRelay({ lane: null, untilIdle: true, sleep: shortSleep() });
    expect([...seen].sort()).toEqual(['mail.sms:1', 'mail.smtp:1', 'shop.audit:1']);
  });

  it('deliverPending delivers every lane unless given one, and drainOutbox takes a lane', async () => {
    const { config, seen } = lanesConfig();
    const outbox = await fired(config);
    await outbox.fire('shop.Placed', { n: 2 });
    expect(await outbox.deliverPending({ lane: 'default' })).toMatchObject({ succeeded: 2 });
    expect(await drainOutbox(outbox, { lane: 'mail' })).toMatchObject({ succeeded: 2 });
    await outbox.fire('mail.Send', { n: 3 });
    await outbox.fire('shop.Placed', { n: 3 });
    expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 3 });
    expect(seen.filter((s) => s.endsWith(':3')).sort()).toEqual([
      'mail.sms:3',
      'mail.smtp:3',
      'shop.audit:3',
    ]);
  });

  it('a lapsed claim in a named lane stays out of the default lane', async () => {
    const clock = testClock();
    const { config, seen } = lanesConfig();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    const mail = await outbox.fire('mail.Send', { n: 1 });
    // A mail relay took the rows and died: its lease lapsed at 1 s.
    await runtimeOf(outbox).store.claim({
      token: { workerId: 'dead-mail-relay', claimedAt: T0 },
      now: T0,
      leaseUntil: new Date(T0.getTime() + 1_000),
      limit: 10,
      onlyEvents: [mail.sequence],
    });
    clock.advance(10_000);
    const report = await outbox.runRelay({ untilIdle: true, sleep: shortSleep() });
    expect(report.succeeded).toBe(0);
    expect((await rowsOf(outbox, 'mail.smtp')).map((r) => r.claimedBy)).toEqual([
      'dead-mail-relay',
    ]);
    await outbox.runRelay({ lane: 'mail', untilIdle: true, sleep: shortSleep() });
    expect([...seen].sort()).toEqual(['mail.sms:1', 'mail.smtp:1']);
  });

  it('without named lanes the default lane sends the unfiltered claim', async () => {
    const config = defineOutbox({
      events: { 'shop.Placed': Placed },
      receivers: { 'shop.audit': receiver(Placed, { handle: () => {} }) },
    });
    const outbox = await openOutbox(db, config);
    const claims = recordClaims(outbox);
    await outbox.fire('shop.Placed', { n: 1 });
    await outbox.runRelay({ untilIdle: true, sleep: shortSleep() });
    await outbox.runRelay({ lane: 'default', untilIdle: true, sleep: shortSleep() });
    expect(claims.length).toBeGreaterThanOrEqual(2);
    for (const c of claims) expect(isUnfiltered(claimShape(c))).toBe(true);
  });

  it('a row rescheduled in place on the real clock is not excluded', async () => {
    const until = new Date(Date.now() + 3_600_000);
    const config = defineOutbox({
      events: { 'shop.Placed': Placed },
      receivers: {
        'shop.later': receiver(Placed, {
          handle: (e) => {
            if (e.payload.n === 1) throw new NotYet(until);
          },
        }),
      },
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('shop.Placed', { n: 1 });
    await outbox.fire('shop.Placed', { n: 2 });
    const claims = recordClaims(outbox);
    const counts = await outbox.deliverPending({ batchSize: 1 });
    expect(counts).toMatchObject({ pending: 1, succeeded: 1 });
    expect(claims.length).toBe(3);
    for (const c of claims) expect(c.excludeIds).toBeUndefined();
    expect((await rowsOf(outbox, 'shop.later'))[0]).toMatchObject({
      status: 'pending',
      dueAt: until,
    });
    // Told a `now` past that time, the pass leaves the row out once it is done with it.
    await outbox.fire('shop.Placed', { n: 1 });
    const later = recordClaims(outbox);
    await outbox.deliverPending({ batchSize: 1, now: new Date(until.getTime() + 7_200_000) });
    expect(later.some((c) => (c.excludeIds?.length ?? 0) > 0)).toBe(true);
  });

  it('a lane no receiver declares is refused at start', async () => {
    const { config } = lanesConfig();
    const outbox = await openOutbox(db, config);
    await expect(outbox.runRelay({ lane: 'mial' })).rejects.toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: runRelay({ lane }): no receiver is declared in lane "mial" (declared lanes: default, mail); a relay serving it would claim nothing and look healthy doing it. Declare a durable receiver with lane: "mial", or serve a declared lane]`,
    );
    await expect(outbox.runRelay({ lane: null, excludeLanes: ['slow'] })).rejects.toThrow(
      ConfigurationError,
    );
    await expect(outbox.deliverPending({ lane: 'slow' })).rejects.toThrow(
      'deliverPending({ lane }): no receiver is declared in lane "slow"',
    );
    expect(config.lanes).toEqual(['default', 'mail']);
  });

  it('moving a receiver to another lane moves its owed rows', async () => {
    const prefix = freshPrefix();
    const before = lanesConfig();
    const first = await openOutbox(db, before.config, { tablePrefix: prefix, clock: () => T0 });
    await first.fire('shop.Placed', { n: 1 });
    // A deploy moves shop.audit to lane `slow`: the row written before it moves with it.
    const after = lanesConfig({ moved: true });
    const second = await openOutbox(db, after.config, { tablePrefix: prefix, clock: () => T0 });
    expect((await second.runRelay({ untilIdle: true, sleep: shortSleep() })).succeeded).toBe(0);
    await second.runRelay({ lane: 'slow', untilIdle: true, sleep: shortSleep() });
    expect(after.seen).toEqual(['shop.audit:1']);
  });

  it("the default lane records a deleted receiver's rows orphaned", async () => {
    const prefix = freshPrefix();
    const before = lanesConfig();
    const first = await openOutbox(db, before.config, { tablePrefix: prefix, clock: () => T0 });
    await first.fire('mail.Send', { n: 1 });
    const after = lanesConfig({ without: 'mail.sms' });
    const second = await openOutbox(db, after.config, { tablePrefix: prefix, clock: () => T0 });
    // The mail lane takes its own receivers' rows, not the row of one no longer declared.
    await second.runRelay({ lane: 'mail', untilIdle: true, sleep: shortSleep() });
    expect((await rowsOf(second, 'mail.sms')).map((r) => r.status)).toEqual(['pending']);
    const report = await second.runRelay({ untilIdle: true, sleep: shortSleep() });
    expect(report.orphaned).toBe(1);
    expect((await rowsOf(second, 'mail.sms')).map((r) => r.status)).toEqual(['orphaned']);
    expect(after.seen).toEqual(['mail.smtp:1']);
  });

  it("a lane's claim stamps its receivers' shared lease plus 10 percent", async () => {
    const { config } = lanesConfig();
    const outbox = await fired(config);
    const rt = runtimeOf(outbox);
    const mail = await claimBatch(rt, { workerId: 'w', now: T0, limit: 10, lanes: ['mail'] });
    expect(mail.leaseSeconds).toBe(22);
    expect(mail.rows.map((r) => r.receiverKey).sort()).toEqual(['mail.sms', 'mail.smtp']);
    const leases = (await rowsOf(outbox, 'mail.smtp')).map((r) => r.leaseUntil);
    expect(leases).toEqual([new Date(T0.getTime() + 22_000)]);
    // The default lane's receiver declares none: settings.leaseSeconds plus 10 percent.
    const main = await claimBatch(rt, { workerId: 'w', now: T0, limit: 10, lanes: ['default'] });
    expect(main.leaseSeconds).toBe(66);
    expect((await rowsOf(outbox, 'shop.audit')).map((r) => r.leaseUntil)).toEqual([
      new Date(T0.getTime() + 66_000),
    ]);
    // Every lane at once: leases of 20 s and 60 s differ, so settings.leaseSeconds + 10 %.
    await outbox.fire('mail.Send', { n: 2 });
    const every = await claimBatch(rt, { workerId: 'w', now: T0, limit: 10 });
    expect([every.leaseSeconds, every.rows.length]).toEqual([66, 2]);
  });
});

describeSplittingDialects('relay: lanes meeting on one table', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('relays of different lanes run at once, each delivering its own lane once', async () => {
    const table = await createReceivedTable(db, 'lanes_received');
    const write =
      (lane: string) =>
      async (e: OutboxEvent<{ n: number }>, ctx: DeliveryContext): Promise<void> => {
        await db.sequelize.query(`INSERT INTO ${table} (event_id, label) VALUES ($1, $2)`, {
          bind: [`${e.id}:${lane}`, lane],
          transaction: ctx.transaction,
        });
      };
    const config = defineOutbox({
      events: { 'mail.Send': Send, 'shop.Placed': Placed },
      receivers: {
        'mail.smtp': receiver(Send, { handle: write('mail'), lane: 'mail' }),
        'shop.audit': receiver(Placed, { handle: write('default') }),
      },
    });
    const outbox = await openOutbox(db, config);
    for (let n = 0; n < 60; n++) {
      await outbox.fire('mail.Send', { n });
      await outbox.fire('shop.Placed', { n });
    }
    const [mail, main, second] = await Promise.all([
      outbox.runRelay({ lane: 'mail', untilIdle: true, batchSize: 7, sleep: shortSleep() }),
      outbox.runRelay({ untilIdle: true, batchSize: 7, sleep: shortSleep() }),
      outbox.runRelay({ untilIdle: true, batchSize: 5, sleep: shortSleep() }),
    ]);
    expect(mail.succeeded).toBe(60);
    expect(main.succeeded + second.succeeded).toBe(60);
    expect(await receivedIds(db, table)).toHaveLength(120);
  });
});

describe('relay: lanes derived once', () => {
  it("a set of lanes' key filter and lease are derived once per outbox, and are those of the config", () => {
    const { config } = lanesConfig();
    const known = new Map<string, LaneClaim>();
    const mail = laneClaimOf(config, known, ['mail']);
    expect(mail).toEqual({
      keys: laneKeyFilter(config, ['mail']),
      leaseSeconds: claimLeaseSeconds(config, ['mail']),
    });
    expect(mail.keys.receiverKeys).toEqual(['mail.sms', 'mail.smtp']);
    expect(laneClaimOf(config, known, ['mail'])).toBe(mail);
    const every = laneClaimOf(config, known, undefined);
    expect(every).toEqual({ keys: {}, leaseSeconds: 66 });
    expect(laneClaimOf(config, known, ['default']).keys).toEqual({
      excludeReceiverKeys: ['mail.sms', 'mail.smtp'],
    });
    expect(laneClaimOf(config, known, undefined)).toBe(every);
    expect(known.size).toBe(3);
  });
});
