import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, inProcessWakeup, type Outbox, receiver } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import { openOutbox, tableName, testClock } from './support.js';

/** Consumed the moment it commits: no durable receiver, deleted once consumed. */
const Gone = event({ schema: z.object({ n: z.number() }), retention: 'succeeded' });
const Mail = event({ schema: z.object({ n: z.number() }) });

const configWith = (settings: Record<string, unknown> = {}) =>
  defineOutbox({
    events: { 'i.Gone': Gone, 'i.Mail': Mail },
    receivers: { 'r.mail': receiver(Mail, { handle: () => {}, lane: 'mail' }) },
    settings: { relayPruneSeconds: 60, pollIntervalMs: 1000, ...settings },
  });
type Config = ReturnType<typeof configWith>;

describeEachDialect('relay: the idle sweep', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const eventCount = async (outbox: Outbox<Config>) =>
    (await runtimeOf(outbox).store.readEvents({})).length;

  /**
   * Run a relay on a monotonic clock that moves `stepMs` at each idle wait; at each wait,
   * `onWait` runs first (it sees the state the pass left), then time moves.
   */
  function relayOn(
    outbox: Outbox<Config>,
    passes: number,
    stepMs: number,
    onWait: () => Promise<void> = async () => {},
    extra: Parameters<Outbox['runRelay']>[0] = {},
  ) {
    let mono = 1_000_000;
    return outbox.runRelay({
      passes,
      monotonic: () => mono,
      sleep: async () => {
        await onWait();
        mono += stepMs;
      },
      ...extra,
    });
  }

  it('the first sweep comes an interval after the relay starts, not at its first idle pass', async () => {
    const outbox = await openOutbox(db, configWith(), { clock: testClock().now });
    await outbox.fire('i.Gone', { n: 1 });
    await relayOn(outbox, 1, 0);
    expect(await eventCount(outbox)).toBe(1);
    await relayOn(outbox, 2, 30_000); // idle at 0 s and 30 s
    expect(await eventCount(outbox)).toBe(1);
    await relayOn(outbox, 3, 30_000); // ... and at 60 s: one interval
    expect(await eventCount(outbox)).toBe(0);
  });

  it('sweeps at most once per interval', async () => {
    const outbox = await openOutbox(db, configWith(), { clock: testClock().now });
    await outbox.fire('i.Gone', { n: 0 });
    const seen: number[] = [];
    let n = 0;
    await relayOn(outbox, 5, 30_000, async () => {
      seen.push(await eventCount(outbox));
      await outbox.fire('i.Gone', { n: ++n });
    });
    // Idle passes at 0, 30, 60 (sweep), 90, 120 (sweep) seconds.
    expect(seen).toEqual([1, 2, 0, 1]);
    expect(await eventCount(outbox)).toBe(0);
  });

  it('a failed sweep counts: it is not retried before the next interval', async () => {
    const prefix = `fail${dialect.name}_`;
    const outbox = await openOutbox(db, configWith(), {
      clock: testClock().now,
      tablePrefix: prefix,
    });
    const errors: string[] = [];
    outbox.on('relay:error', (e) => errors.push(e.during));
    const name = `${prefix}receiver_last_success`;
    const away = `${name}_away`;
    await db.sequelize.query(`ALTER TABLE ${tableName(db, name)} RENAME TO "${away}"`);
    await outbox.fire('i.Gone', { n: 1 });
    const seen: number[] = [];
    let pass = 0;
    await relayOn(outbox, 5, 30_000, async () => {
      pass += 1;
      seen.push(await eventCount(outbox));
      // After the failed sweep at 60 s, the table is back.
      if (pass === 3)
        await db.sequelize.query(`ALTER TABLE ${tableName(db, away)} RENAME TO "${name}"`);
    });
    // 60 s: the sweep fails; 90 s: not retried; 120 s: the next interval's sweep.
    expect(seen).toEqual([1, 1, 1, 1]);
    expect(errors).toEqual(['prune']);
    expect(await eventCount(outbox)).toBe(0);
  });

  it('relayPrune: false turns the sweep off', async () => {
    const outbox = await openOutbox(db, configWith({ relayPrune: false }), {
      clock: testClock().now,
    });
    await outbox.fire('i.Gone', { n: 1 });
    await relayOn(outbox, 4, 60_000);
    expect(await eventCount(outbox)).toBe(1);
  });

  it('every relay sweeps whatever its lane', async () => {
    const outbox = await openOutbox(db, configWith(), { clock: testClock().now });
    await outbox.fire('i.Gone', { n: 1 });
    await relayOn(outbox, 2, 60_000, async () => {}, { lane: 'mail' });
    expect(await eventCount(outbox)).toBe(0);
  });

  it("reads the stop signal between the sweep's batches", async () => {
    const outbox = await openOutbox(db, configWith({ pruneBatchRows: 1 }), {
      clock: testClock().now,
    });
    for (let n = 0; n < 3; n++) await outbox.fire('i.Gone', { n });
    const stop = new AbortController();
    // Stop as the first batch deletes its event.
    const options = (db.sequelize as unknown as { options: { logging: unknown } }).options;
    const previous = options.logging;
    options.logging = (sql: string) => {
      if (/DELETE (x )?FROM \S*events/.test(sql)) stop.abort();
    };
    try {
      await relayOn(outbox, 3, 60_000, async () => {}, { signal: stop.signal });
    } finally {
      options.logging = previous;
    }
    expect(await eventCount(outbox)).toBe(2);
  });

  /** A relay whose every sweep batch takes `batchMs` on the monotonic clock. */
  function timedRelay(
    outbox: Outbox<Config>,
    passes: number,
    batchMs: number,
    onWait: () => Promise<void>,
  ) {
    let mono = 1_000_000;
    const off = outbox.on('relay:pruned', () => {
      mono += batchMs;
    });
    return outbox
      .runRelay({
        passes,
        monotonic: () => mono,
        sleep: async () => {
          await onWait();
          mono += 60_000;
        },
      })
      .finally(off);
  }

  it('a sweep yields to the relay once it has held it for a poll interval, and goes on at the next idle pass', async () => {
    // Batches of 2 rows (2 events with no deliveries), each taking 600 ms; the poll
    // interval is 1 s: a sweep pass deletes 2 batches, then lets the relay claim.
    const outbox = await openOutbox(db, configWith({ pruneBatchRows: 2 }), {
      clock: testClock().now,
    });
    for (let n = 0; n < 10; n++) await outbox.fire('i.Gone', { n });
    const claims: number[] = [];
    const off = outbox.on('relay:claimed', () => claims.push(0));
    const left: number[] = [];
    const pruned: number[] = [];
    const offPruned = outbox.on('relay:pruned', (b) => pruned.push(b.events));
    try {
      // Idle at 0 s (no sweep yet), then 60 s: the sweep begins, and yields, and goes on
      // at each following pass without waiting for the next interval.
      await timedRelay(outbox, 6, 600, async () => {
        left.push(await eventCount(outbox));
      });
    } finally {
      off();
      offPruned();
    }
    expect(pruned).toEqual([2, 2, 2, 2, 2]);
    expect(left).toEqual([10, 0, 0]);
    // Every pass claimed first: 6 passes, the sweep spread over 4 of them (it yields after
    // its last batch too, and finds nothing due at the pass after).
    expect(claims.length).toBe(6);
    expect(await eventCount(outbox)).toBe(0);
  });

  it('a sweep yields between batches when a wakeup says something was written', async () => {
    const wakeup = inProcessWakeup();
    const outbox = await openOutbox(db, configWith({ pruneBatchRows: 1 }), {
      clock: testClock().now,
      wakeup,
    });
    for (let n = 0; n < 5; n++) await outbox.fire('i.Gone', { n });
    const seen: string[] = [];
    const offClaimed = outbox.on('relay:claimed', () => seen.push('claim'));
    // A wakeup during the sweep's first batch (it reaches the relay in a microtask, so the
    // batch after it is already under way): the sweep stops after that one, the relay
    // claims, and the sweep goes on at the next idle pass.
    const offPruned = outbox.on('relay:pruned', () => {
      if (!seen.includes('prune')) wakeup.signal(['i.Gone']);
      seen.push('prune');
    });
    try {
      await relayOn(outbox, 3, 60_000);
    } finally {
      offClaimed();
      offPruned();
    }
    // Pass 1 at 0 s: nothing owed, no sweep yet. Pass 2 at 60 s: the sweep, cut short by
    // the wakeup. Pass 3: the relay claims, then the sweep finishes.
    expect(seen).toEqual(['claim', 'claim', 'prune', 'prune', 'claim', 'prune', 'prune', 'prune']);
    expect(await eventCount(outbox)).toBe(0);
  });

  it('a sweep that yielded goes on beside the work, so a relay that is never idle again still finishes it', async () => {
    const CHAIN = 60;
    let goneAtLastMail = -1;
    let outbox!: Outbox<ReturnType<typeof chained>>;
    const gone = async () => (await runtimeOf(outbox).store.readEvents({ name: 'i.Gone' })).length;
    // Each mail's handler fires the next one in its own transaction: once the first is
    // written, the relay always has a row to claim until the chain ends.
    const chained = () =>
      defineOutbox({
        events: { 'i.Gone': Gone, 'i.Mail': Mail },
        receivers: {
          'r.mail': receiver(Mail, {
            handle: async (e, context) => {
              if (e.payload.n < CHAIN)
                await outbox.fire(
                  'i.Mail',
                  { n: e.payload.n + 1 },
                  { transaction: context.transaction },
                );
              else goneAtLastMail = await gone();
            },
          }),
        },
        settings: { relayPruneSeconds: 60, pollIntervalMs: 1000, pruneBatchRows: 1 },
      });
    outbox = await openOutbox(db, chained(), { clock: testClock().now });
    for (let n = 0; n < 20; n++) await outbox.fire('i.Gone', { n });
    let mono = 1_000_000;
    let first: Promise<unknown> | undefined;
    let written = false;
    // The sweep's first batch writes the first mail; once it is committed, every batch
    // takes 2 s, past the 1 s budget: the sweep yields, and from then on runs one batch
    // beside each claim.
    const off = outbox.on('relay:pruned', () => {
      first ??= outbox.fire('i.Mail', { n: 1 }).then(() => {
        written = true;
      });
      if (written) mono += 2_000;
    });
    try {
      await outbox.runRelay({
        passes: 200,
        monotonic: () => mono,
        sleep: async () => {
          mono += 60_000;
        },
      });
    } finally {
      off();
    }
    await first;
    expect(goneAtLastMail).toBe(0);
    expect(await gone()).toBe(0);
  });
});
