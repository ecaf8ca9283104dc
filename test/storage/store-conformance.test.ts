import { randomUUID } from 'node:crypto';
import type { Transaction } from 'sequelize';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { ClaimToken, EventRowInput, OutboxStore, Outcome } from '../../src/storage/store.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';

/**
 * The OutboxStore conformance suite: the same expectations, word for word, for every
 * dialect, so SQLite and PostgreSQL cannot drift apart. One block per role: the event
 * log, the delivery queue, maintenance, the single-writer lock (where the dialect's
 * capabilities say it has one) and the capabilities themselves.
 */
const config = defineOutbox({
  events: { 'a.Happened': event({ schema: z.object({ n: z.number() }) }) },
  receivers: {
    'r.one': receiver('a.Happened', { handle: () => {} }),
    'r.two': receiver('a.Happened', { handle: () => {} }),
  },
});

const T0 = new Date('2030-01-01T00:00:00.000Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
let claimSeq = 0;
const token = (workerId: string): ClaimToken => ({
  workerId,
  claimedAt: new Date(T0.getTime() + ++claimSeq),
});

describeEachDialect('OutboxStore conformance', (dialect) => {
  let db: TestDatabase;
  let store: OutboxStore;
  let outbox: ReturnType<typeof createOutbox<typeof config>>;
  let tablePrefix = 0;

  beforeAll(async () => {
    db = await dialect.open();
  });
  beforeEach(async () => {
    // A fresh set of tables per test: a new prefix in the same database.
    outbox = createOutbox(config, {
      ...db.outboxOptions,
      tablePrefix: `c${++tablePrefix}_`,
      wakeup: null,
      logger: silentLogger,
      clock: () => T0,
    });
    await outbox.migrate();
    store = runtimeOf(outbox).store;
  });
  afterAll(() => db.cleanup());

  /** An event row to write straight through the event log, owing one delivery (r.one). */
  const eventRow = (
    payload: { n: number },
    orderingKey: string | null = null,
    idempotencyKey: string | null = null,
  ): EventRowInput => ({
    uuid: randomUUID(),
    name: 'a.Happened',
    version: 1,
    payload: JSON.stringify(payload),
    headers: '{}',
    orderingKey,
    idempotencyKey,
    occurredAt: T0,
    recordedAt: T0,
    retentionSeconds: null,
    deleteWhen: null,
    actor: null,
    correlationId: null,
    causedBy: null,
    suppressedReason: null,
    deliveries: [
      { receiverKey: 'r.one', target: '', maxAttempts: 5, availableAt: T0, dueAt: null },
    ],
  });

  const claim = (
    workerId: string,
    now: Date,
    limit = 100,
    extra: { ignoreBackoff?: boolean; excludeIds?: string[] } = {},
  ) =>
    store.claim({
      token: token(workerId),
      now,
      leaseUntil: new Date(now.getTime() + 60_000),
      limit,
      ...extra,
    });

  describe('event log', () => {
    it('writes an event with its delivery rows and reads it back by name and by sequence', async () => {
      const [written] = await db.sequelize.transaction((tx) =>
        store.insertEvents([eventRow({ n: 1 })], tx),
      );
      expect(written.inserted).toBe(true);
      const byName = await store.readEvents({ name: 'a.Happened' });
      expect(byName.map((e) => [e.sequence, e.uuid])).toEqual([[written.sequence, written.uuid]]);
      expect(decode(byName[0].payload)).toEqual({ n: 1 });
      expect(await store.readEvents({ name: 'b.Other' })).toEqual([]);
      expect(
        (await store.readEvents({ sequences: [written.sequence] })).map((e) => e.uuid),
      ).toEqual([written.uuid]);
      const rows = await store.readDeliveries({ eventSequence: written.sequence });
      expect(rows.map((r) => [r.receiverKey, r.status, r.attempts])).toEqual([
        ['r.one', 'pending', 0],
      ]);
    });

    it('answers every input in input order, across many events in one call', async () => {
      // 20,000 distinct ordering keys in one transaction: once too many for PostgreSQL's
      // lock table (one advisory lock per key), and 4 s of parameter binding on SQLite.
      const inputs = Array.from({ length: 20_000 }, (_, n) => eventRow({ n }, `key-${n}`));
      const written = await db.sequelize.transaction((tx) => store.insertEvents(inputs, tx));
      expect(written.map((w) => w.uuid)).toEqual(inputs.map((e) => e.uuid));
      expect(written.every((w) => w.inserted)).toBe(true);
      const sequences = written.map((w) => Number(w.sequence));
      expect([...sequences].sort((a, b) => a - b)).toEqual(sequences);
      expect((await store.countDeliveries()).pending).toBe(20_000);
    });

    it('a repeated idempotency key writes nothing and returns the stored event', async () => {
      const first = eventRow({ n: 1 }, null, 'once');
      const [stored] = await db.sequelize.transaction((tx) => store.insertEvents([first], tx));
      const repeat = eventRow({ n: 2 }, null, 'once');
      const fresh = eventRow({ n: 3 });
      const answers = await db.sequelize.transaction((tx) =>
        store.insertEvents([repeat, fresh, repeat], tx),
      );
      expect(answers[0]).toEqual({ sequence: stored.sequence, uuid: first.uuid, inserted: false });
      expect(answers[1]).toMatchObject({ uuid: fresh.uuid, inserted: true });
      expect(answers[2]).toEqual(answers[0]);
      expect((await store.readEvents({})).map((e) => decode(e.payload))).toEqual([
        { n: 1 },
        { n: 3 },
      ]);
      expect((await store.readDeliveries({ eventSequence: stored.sequence })).length).toBe(1);
    });
  });

  describe('delivery queue', () => {
    it('claims owed rows oldest event first, up to the limit, with their events', async () => {
      await outbox.fire('a.Happened', { n: 1 });
      await outbox.fire('a.Happened', { n: 2 });
      const rows = await claim('w', at(1), 3);
      expect(
        rows.map((r) => [
          r.event.name,
          (decode(r.event.payload) as { n: number }).n,
          r.receiverKey,
        ]),
      ).toEqual([
        ['a.Happened', 1, 'r.one'],
        ['a.Happened', 1, 'r.two'],
        ['a.Happened', 2, 'r.one'],
      ]);
      expect(Number(rows[0].event.sequence)).toBeLessThan(Number(rows[2].event.sequence));
      expect(rows[0].attempts).toBe(0);
      expect(rows[0].maxAttempts).toBe(5);
    });

    it("a claim returns the event's times and the row's due time to the millisecond", async () => {
      const occurred = new Date('2029-12-31T23:59:58.123Z');
      const recorded = new Date('2029-12-31T23:59:59.987Z');
      const due = new Date('2030-01-01T00:00:00.001Z');
      const [written] = await db.sequelize.transaction((tx) =>
        store.insertEvents(
          [{ ...eventRow({ n: 1 }), occurredAt: occurred, recordedAt: recorded }],
          tx,
        ),
      );
      const [row] = await claim('w', at(1), 1);
      expect(row.event.sequence).toBe(written.sequence);
      expect(row.event.occurredAt.toISOString()).toBe(occurred.toISOString());
      expect(row.event.recordedAt.toISOString()).toBe(recorded.toISOString());
      expect(row.dueAt).toBeNull();
      // A NotYet gives the row a due time; the next claim reads it back exactly.
      const t = token('w2');
      const [again] = await store.claim({ token: t, now: at(100), leaseUntil: at(160), limit: 1 });
      expect(
        await store.recordOutcomes(
          [
            {
              id: again.id,
              status: 'pending',
              attempts: 0,
              availableAt: due,
              dueAt: due,
              lastError: null,
              completedAt: null,
            },
          ],
          t,
        ),
      ).toBe(1);
      const [due1] = await claim('w3', at(200), 1);
      expect(due1.dueAt?.toISOString()).toBe(due.toISOString());
    });

    it('a claimed row is not claimed again while its lease is live, and is once it lapses', async () => {
      await outbox.fire('a.Happened', { n: 1 });
      expect(await claim('a', at(1))).toHaveLength(2);
      expect(await claim('b', at(30))).toHaveLength(0);
      const retaken = await claim('b', at(61 + 1));
      expect(retaken.map((r) => r.receiverKey)).toEqual(['r.one', 'r.two']);
    });

    it('a failed row waits out its available_at unless the backoff is ignored', async () => {
      await outbox.fire('a.Happened', { n: 1 });
      const t = token('w');
      const [row] = await store.claim({ token: t, now: at(1), leaseUntil: at(61), limit: 1 });
      await store.recordOutcomes(
        [
          {
            id: row.id,
            status: 'failed',
            attempts: 1,
            availableAt: at(100),
            lastError: 'boom',
            completedAt: null,
          },
        ],
        t,
      );
      expect((await claim('x', at(2))).map((r) => r.id)).not.toContain(row.id);
      expect((await claim('y', at(3), 100, { ignoreBackoff: true })).map((r) => r.id)).toContain(
        row.id,
      );
    });

    it('an earlier owed or dead row of an ordering key holds back only its own key and receiver', async () => {
      await outbox.fire('a.Happened', { n: 1 }, { orderingKey: 'k1' });
      await outbox.fire('a.Happened', { n: 2 }, { orderingKey: 'k1' });
      await outbox.fire('a.Happened', { n: 3 }, { orderingKey: 'k2' });
      await outbox.fire('a.Happened', { n: 4 });
      const first = await claim('w', at(1));
      // One event per key and receiver: n=2 waits behind n=1.
      expect(
        first.map((r) => `${r.receiverKey}:${(decode(r.event.payload) as { n: number }).n}`),
      ).toEqual(['r.one:1', 'r.two:1', 'r.one:3', 'r.two:3', 'r.one:4', 'r.two:4']);
      // r.one's n=1 goes dead, r.two's succeeds: r.two moves on to n=2, r.one's k1 stays held.
      const t = { workerId: 'w', claimedAt: new Date(T0.getTime() + claimSeq) };
      const one = first.find((r) => r.receiverKey === 'r.one')!;
      const two = first.find((r) => r.receiverKey === 'r.two')!;
      await store.recordOutcomes(
        [
          {
            id: one.id,
            status: 'dead',
            attempts: 5,
            availableAt: null,
            lastError: 'gone',
            completedAt: at(2),
          },
          {
            id: two.id,
            status: 'succeeded',
            attempts: 1,
            availableAt: null,
            lastError: null,
            completedAt: at(2),
          },
        ],
        t,
      );
      const next = await claim('w2', at(50)); // the rest of the first batch is still leased
      expect(
        next.map((r) => `${r.receiverKey}:${(decode(r.event.payload) as { n: number }).n}`),
      ).toEqual(['r.two:2']);
    });

    it('recording is a compare-and-set on the claim: a stale worker changes nothing', async () => {
      await outbox.fire('a.Happened', { n: 1 });
      const stale = token('stale');
      const rows = await store.claim({ token: stale, now: at(1), leaseUntil: at(2), limit: 1 });
      const fresh = token('fresh');
      const retaken = await store.claim({ token: fresh, now: at(5), leaseUntil: at(65), limit: 1 });
      expect(retaken.map((r) => r.id)).toEqual(rows.map((r) => r.id));
      const changed = await store.recordOutcomes(
        [
          {
            id: rows[0].id,
            status: 'dead',
            attempts: 1,
            availableAt: null,
            lastError: 'stale verdict',
            completedAt: at(6),
          },
        ],
        stale,
      );
      expect(changed).toBe(0);
      expect(await store.renewLeases([rows[0].id], stale, at(500))).toBe(0);
      expect(
        await store.recordOutcomes(
          [
            {
              id: rows[0].id,
              status: 'succeeded',
              attempts: 1,
              availableAt: null,
              lastError: null,
              completedAt: at(7),
            },
          ],
          fresh,
        ),
      ).toBe(1);
      const [row] = (await store.readDeliveries({})).filter((r) => r.id === rows[0].id);
      expect(row).toMatchObject({ status: 'succeeded', attempts: 1, claimedBy: 'fresh' });
      expect(row.succeededAt?.toISOString()).toBe(at(7).toISOString());
    });

    it('records a batch that all succeeded, one that all failed, and a mixed one, each a compare-and-set', async () => {
      const ok = (id: string, s: number): Outcome => ({
        id,
        status: 'succeeded',
        attempts: 1,
        availableAt: null,
        lastError: null,
        completedAt: at(s),
      });
      const failed = (id: string): Outcome => ({
        id,
        status: 'failed',
        attempts: 1,
        availableAt: at(30),
        lastError: 'try later',
        completedAt: at(3),
      });
      const batch = async () => {
        for (let n = 0; n < 2; n++) await outbox.fire('a.Happened', { n });
        const t = token('w');
        const rows = await store.claim({ token: t, now: at(1), leaseUntil: at(61), limit: 4 });
        return { t, ids: rows.map((r) => r.id) };
      };
      const statusOf = async (ids: string[]) => {
        const all = await store.readDeliveries({});
        return ids.map((id) => {
          const r = all.find((x) => x.id === id)!;
          return [r.status, r.attempts, r.lastError, r.succeededAt?.toISOString() ?? null];
        });
      };

      // All succeeded: one completion time for the batch, its last.
      const a = await batch();
      expect(await store.recordOutcomes([ok(a.ids[0], 2), ok(a.ids[1], 4)], a.t)).toBe(2);
      expect(await store.recordOutcomes([ok(a.ids[2], 2)], token('stale'))).toBe(0);
      expect(await store.recordOutcomes([ok(a.ids[2], 2), ok(a.ids[3], 3)], a.t)).toBe(2);
      expect(await statusOf(a.ids)).toEqual([
        ['succeeded', 1, null, at(4).toISOString()],
        ['succeeded', 1, null, at(4).toISOString()],
        ['succeeded', 1, null, at(3).toISOString()],
        ['succeeded', 1, null, at(3).toISOString()],
      ]);

      // None succeeded.
      const b = await batch();
      expect(await store.recordOutcomes(b.ids.map(failed), b.t)).toBe(4);
      expect((await statusOf(b.ids)).map((r) => r[0])).toEqual([
        'failed',
        'failed',
        'failed',
        'failed',
      ]);

      // Mixed: both kinds in one record; a stale worker changes neither kind.
      const c = await batch();
      const mixed = [ok(c.ids[0], 5), failed(c.ids[1]), ok(c.ids[2], 6), failed(c.ids[3])];
      expect(await store.recordOutcomes(mixed, token('stale'))).toBe(0);
      expect((await statusOf(c.ids)).map((r) => r[0])).toEqual([
        'claimed',
        'claimed',
        'claimed',
        'claimed',
      ]);
      expect(await store.recordOutcomes(mixed, c.t)).toBe(4);
      expect(await statusOf(c.ids)).toEqual([
        ['succeeded', 1, null, at(6).toISOString()],
        ['failed', 1, 'try later', null],
        ['succeeded', 1, null, at(6).toISOString()],
        ['failed', 1, 'try later', null],
      ]);
    });

    it('acknowledge inside a transaction succeeds once, and never for a lost claim', async () => {
      await outbox.fire('a.Happened', { n: 1 });
      const t = token('w');
      const [row] = await store.claim({ token: t, now: at(1), leaseUntil: at(61), limit: 1 });
      const ok = await db.sequelize.transaction((tx) => store.acknowledge(row.id, t, at(2), tx));
      expect(ok).toBe(true);
      const again = await db.sequelize.transaction((tx) => store.acknowledge(row.id, t, at(3), tx));
      expect(again).toBe(false);
    });

    it('release hands rows back for any worker to claim at once', async () => {
      await outbox.fire('a.Happened', { n: 1 });
      const t = token('w');
      const rows = await store.claim({ token: t, now: at(1), leaseUntil: at(61), limit: 10 });
      expect(
        await store.release(
          rows.map((r) => r.id),
          t,
          at(2),
        ),
      ).toBe(2);
      expect(await claim('other', at(2))).toHaveLength(2);
    });

    it('the take under a claim moves a row held under exactly that claim and live lease, once, with its event', async () => {
      const fired = await outbox.fire('a.Happened', { n: 7 }, { orderingKey: 'k' });
      const handedOff = token('relay');
      const [row] = await store.claim({
        token: handedOff,
        now: at(1),
        leaseUntil: at(61),
        limit: 1,
      });
      const worker = token('task-worker');
      // Another claim's time, or a lease lapsed by now: no take.
      expect(
        await store.takeClaim(row.id, { ...handedOff, claimedAt: at(99) }, worker, at(120), at(2)),
      ).toBeUndefined();
      expect(await store.takeClaim(row.id, handedOff, worker, at(120), at(61))).toBeUndefined();
      const taken = await store.takeClaim(row.id, handedOff, worker, at(120), at(2));
      expect(taken).toMatchObject({
        id: row.id,
        receiverKey: row.receiverKey,
        attempts: 0,
        maxAttempts: 5,
        event: { uuid: fired.id, name: 'a.Happened', orderingKey: 'k' },
      });
      // The event exactly as the claim reads it (the one decoder takes it from there).
      expect(taken?.event).toEqual(row.event);
      // The same message again: the row is the worker's now.
      expect(
        await store.takeClaim(row.id, handedOff, token('other'), at(120), at(3)),
      ).toBeUndefined();
      const [stored] = (await store.readDeliveries({})).filter((r) => r.id === row.id);
      expect(stored).toMatchObject({ status: 'claimed', claimedBy: 'task-worker' });
      expect(stored.leaseUntil?.getTime()).toBe(at(120).getTime());
      // Settled under the worker's claim, it is never taken again.
      await store.recordOutcomes(
        [
          {
            id: row.id,
            status: 'succeeded',
            attempts: 1,
            availableAt: null,
            lastError: null,
            completedAt: at(4),
          },
        ],
        worker,
      );
      expect(await store.takeClaim(row.id, worker, token('late'), at(120), at(5))).toBeUndefined();
    });

    it('excluded ids are left out of a claim', async () => {
      await outbox.fire('a.Happened', { n: 1 });
      const all = await store.readDeliveries({});
      const rows = await claim('w', at(1), 10, { excludeIds: [all[0].id] });
      expect(rows.map((r) => r.id)).toEqual([all[1].id]);
    });

    it('a NotYet outcome moves the row to its time without spending an attempt', async () => {
      await outbox.fire('a.Happened', { n: 1 });
      const t = token('w');
      const [row] = await store.claim({ token: t, now: at(1), leaseUntil: at(61), limit: 1 });
      await store.recordOutcomes(
        [
          {
            id: row.id,
            status: 'pending',
            attempts: 0,
            availableAt: at(500),
            dueAt: at(500),
            lastError: null,
            completedAt: null,
          },
        ],
        t,
      );
      const [stored] = (await store.readDeliveries({})).filter((r) => r.id === row.id);
      expect(stored).toMatchObject({ status: 'pending', attempts: 0 });
      expect(stored.availableAt.toISOString()).toBe(at(500).toISOString());
      expect((await claim('x', at(499))).map((r) => r.id)).not.toContain(row.id);
      expect((await claim('x', at(500))).map((r) => r.id)).toContain(row.id);
    });
  });

  describe('claim filters', () => {
    /** Write one event of `name` owing a row to each of `keys`; returns its sequence. */
    const write = async (name: string, keys: readonly string[] = ['r.one']) => {
      const row = {
        ...eventRow({ n: 0 }),
        name,
        deliveries: keys.map((receiverKey) => ({
          receiverKey,
          target: '',
          maxAttempts: 5,
          availableAt: T0,
          dueAt: null,
        })),
      };
      const [w] = await db.sequelize.transaction((tx) => store.insertEvents([row], tx));
      return w.sequence;
    };
    const claimWith = async (now: Date, filter: Partial<Parameters<OutboxStore['claim']>[0]>) =>
      (
        await store.claim({
          token: token('f'),
          now,
          leaseUntil: new Date(now.getTime() + 60_000),
          limit: 100,
          ...filter,
        })
      ).map((r) => `${r.event.name}/${r.receiverKey}`);

    it('by receiver keys, included or left out, covering lapsed claims too', async () => {
      await write('a.Happened', ['r.one', 'r.two', 'r.gone']);
      // r.two's row is claimed under a lease that lapses at 10 s.
      await store.claim({
        token: token('dead'),
        now: at(1),
        leaseUntil: at(10),
        limit: 100,
        receiverKeys: ['r.two'],
      });
      expect(await claimWith(at(20), { receiverKeys: [] })).toEqual([]);
      expect(await claimWith(at(20), { excludeReceiverKeys: ['r.two'] })).toEqual([
        'a.Happened/r.one',
        'a.Happened/r.gone',
      ]);
      // The lapsed claim is taken only by a claim of its own key.
      expect(await claimWith(at(20), { receiverKeys: ['r.one', 'r.gone'] })).toEqual([]);
      expect(await claimWith(at(20), { receiverKeys: ['r.two'] })).toEqual(['a.Happened/r.two']);
    });

    it('by topic names and prefix patterns, whose _ and % are plain characters', async () => {
      for (const name of ['library.BookAdded', 'library.LoanEnded', 'lib_x.A', 'libXx.B', 'shop.%'])
        await write(name);
      await write('shopX');
      expect(await claimWith(at(1), { topics: ['lib_*'] })).toEqual(['lib_x.A/r.one']);
      expect(await claimWith(at(1), { topics: ['shop.%*'] })).toEqual(['shop.%/r.one']);
      expect(await claimWith(at(1), { topics: ['library.*', 'shopX'] })).toEqual([
        'library.BookAdded/r.one',
        'library.LoanEnded/r.one',
        'shopX/r.one',
      ]);
      expect(await claimWith(at(1), { topics: [] })).toEqual([]);
      expect(await claimWith(at(1), {})).toEqual(['libXx.B/r.one']);
    });

    it('leaving topics out, by name and by pattern', async () => {
      for (const name of ['library.BookAdded', 'taskiq', 'shop.Placed', 'shop.Paid'])
        await write(name);
      expect(await claimWith(at(1), { excludeTopics: ['taskiq', 'shop.*'] })).toEqual([
        'library.BookAdded/r.one',
      ]);
      expect(await claimWith(at(1), { topics: ['shop.*'], excludeTopics: ['shop.Paid'] })).toEqual([
        'shop.Placed/r.one',
      ]);
      expect(await claimWith(at(1), { excludeTopics: [] })).toEqual([
        'taskiq/r.one',
        'shop.Paid/r.one',
      ]);
    });

    it('only the rows of given events, for given receivers', async () => {
      const first = await write('a.Happened', ['r.one', 'r.two']);
      const second = await write('a.Happened', ['r.one', 'r.two']);
      const rows = await store.claim({
        token: token('eager'),
        now: at(1),
        leaseUntil: at(61),
        limit: 100,
        onlyEvents: [second],
        receiverKeys: ['r.two'],
      });
      expect(rows.map((r) => [r.event.sequence, r.receiverKey])).toEqual([[second, 'r.two']]);
      expect((await claimWith(at(1), { onlyEvents: [first] })).length).toBe(2);
    });
  });

  describe('maintenance', () => {
    it('counts deliveries by status, zeros included', async () => {
      await outbox.fire('a.Happened', { n: 1 });
      expect(await store.countDeliveries()).toEqual({
        pending: 2,
        claimed: 0,
        succeeded: 0,
        failed: 0,
        dead: 0,
        orphaned: 0,
        cancelled: 0,
      });
    });

    it('reads the delivery rows of one event, or of all', async () => {
      await outbox.fire('a.Happened', { n: 1 });
      await outbox.fire('a.Happened', { n: 2 });
      const all = await store.readDeliveries({});
      expect(all).toHaveLength(4);
      const one = await store.readDeliveries({ eventSequence: all[3].eventSequence });
      expect(one.map((r) => r.receiverKey)).toEqual(['r.one', 'r.two']);
      expect(one.every((r) => r.eventSequence === all[3].eventSequence)).toBe(true);
    });
  });

  describe('single-writer lock (where the dialect cannot split the queue)', () => {
    it('the single-relay lock admits one holder at a time until its lease lapses', async (ctx) => {
      if (!store.relayLock) return ctx.skip();
      const lock = store.relayLock;
      expect(await lock.acquire('a', at(0), at(60))).toBe(true);
      expect(await lock.acquire('a', at(10), at(70))).toBe(true); // renew
      const second = await lock.acquire('b', at(20), at(80));
      expect(second).toBe(false);
      expect(await lock.acquire('b', at(71), at(131))).toBe(true); // a's lease lapsed
      await lock.release('b');
      expect(await lock.acquire('c', at(72), at(132))).toBe(true);
    });

    it('says who holds the lock and when its lease lapses, and nobody once released', async (ctx) => {
      if (!store.relayLock) return ctx.skip();
      const lock = store.relayLock;
      expect(await lock.current()).toBeUndefined();
      await lock.acquire('a', at(0), at(15));
      expect(await lock.current()).toEqual({ holder: 'a', leaseUntil: at(15) });
      await lock.acquire('a', at(5), at(20)); // renewing moves the lapse
      expect(await lock.current()).toEqual({ holder: 'a', leaseUntil: at(20) });
      await lock.acquire('b', at(10), at(30)); // refused: a still holds it
      expect(await lock.current()).toEqual({ holder: 'a', leaseUntil: at(20) });
      await lock.release('b'); // not the holder: changes nothing
      expect((await lock.current())?.holder).toBe('a');
      await lock.release('a');
      expect(await lock.current()).toBeUndefined();
    });
  });

  describe('capabilities', () => {
    it('a dialect has a single-writer lock exactly when it cannot split the queue', () => {
      expect(store.relayLock === undefined).toBe(store.capabilities.splitsQueue);
      // Splitting the queue means relays writing at once: it needs many writers.
      if (store.capabilities.splitsQueue) expect(store.capabilities.writers).toBe('many');
      expect(['one', 'many']).toContain(store.capabilities.writers);
      expect([undefined, 'DEFERRED', 'IMMEDIATE', 'EXCLUSIVE']).toContain(
        store.capabilities.handlerTransaction.type,
      );
      expect(typeof store.capabilities.notifiesInWrite).toBe('boolean');
    });

    it('handler transactions opened with its options acknowledge side by side, queueing where there is one writer', async () => {
      await outbox.fire('a.Happened', { n: 1 });
      const t = token('w');
      const rows = await store.claim({ token: t, now: at(1), leaseUntil: at(61), limit: 2 });
      expect(rows).toHaveLength(2);
      // The capability's words are Sequelize's Transaction.TYPES values.
      const options = {
        type: store.capabilities.handlerTransaction.type as Transaction.TYPES | undefined,
      };
      const acks = await Promise.all(
        rows.map((row) =>
          db.sequelize.transaction(options, async (tx) => {
            const ok = await store.acknowledge(row.id, t, at(2), tx);
            await store.readEvents({ sequences: [row.event.sequence] }, tx);
            return ok;
          }),
        ),
      );
      expect(acks).toEqual([true, true]);
      expect((await store.countDeliveries()).succeeded).toBe(2);
    });
  });
});

function decode(payload: unknown): unknown {
  return typeof payload === 'string' ? JSON.parse(payload) : payload;
}
