import { Sequelize } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  defineOutbox,
  event,
  type Outbox,
  type PruneBatch,
  receiver,
  suppressed,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { dialectOf } from '../../src/storage/dialects.js';
import { lockEventIdsSql } from '../../src/storage/postgres/event-locks.js';
import { tableNames } from '../../src/storage/tables.js';
import type { TestDatabase } from '../../testing/databases.js';
import {
  deliveryRows,
  describePostgres,
  openOutbox,
  T0,
  tableName,
  testClock,
  waitFor,
} from '../relay/support.js';
import { describeEachDialect, sqlOf } from '../support/dialects.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const at = (ms: number) => new Date(T0.getTime() + ms);

const Kept = event({ schema: z.object({ n: z.number() }) });
const Consumed = event({ schema: z.object({ n: z.number() }), retention: 'succeeded' });
const Settles = event({ schema: z.object({ n: z.number() }), retention: 'settled' });
const Windowed = event({ schema: z.object({ n: z.number() }), retention: { days: 1 } });
const LongWindow = event({ schema: z.object({ n: z.number() }), retention: { days: 30 } });
const Lonely = event({ schema: z.object({ n: z.number() }), retention: 'succeeded' });
const Plain = event({ schema: z.object({ n: z.number() }) });
const Fanned = event({ schema: z.object({ n: z.number() }) });

const config = defineOutbox({
  events: {
    'p.Kept': Kept,
    'p.Consumed': Consumed,
    'p.Settles': Settles,
    'p.Windowed': Windowed,
    'p.LongWindow': LongWindow,
    'p.Lonely': Lonely,
    'p.Plain': Plain,
    'p.Fanned': Fanned,
  },
  receivers: {
    'r.kept': receiver(Kept, { handle: () => {} }),
    'r.consumed.one': receiver(Consumed, { handle: () => {} }),
    'r.consumed.two': receiver(Consumed, { handle: () => {} }),
    'r.settles': receiver(Settles, { handle: () => {} }),
    'r.windowed': receiver(Windowed, { handle: () => {} }),
    'r.long': receiver(LongWindow, { handle: () => {} }),
    'r.fanned': receiver(Fanned, {
      deliver: async () => {},
      targets: () => ['t1', 't2', 't3', 't4', 't5', 't6', 't7'],
    }),
  },
});

type Config = typeof config;

/** Set the status of delivery rows (of one receiver, or all) of an event, as a relay would. */
async function setStatus(
  db: TestDatabase,
  outbox: Outbox<Config>,
  sequence: string,
  status: string,
  options: { receiverKey?: string; succeededAt?: Date } = {},
): Promise<void> {
  const rt = runtimeOf(outbox);
  const t = tableNames(prefixOf(outbox), db.outboxOptions.schema);
  const ts = (x: Date | null) => dialectOf(rt.sequelize).sql.value(x, 'timestamp');
  const done = status === 'pending' || status === 'failed' || status === 'claimed' ? null : T0;
  await sqlOf(db.sequelize).run(
    `UPDATE ${t.deliveries} SET status = $1, completed_at = $2, succeeded_at = $3, lease_until = $4
     WHERE event_id = $5${options.receiverKey ? ` AND receiver_key = '${options.receiverKey}'` : ''}`,
    [
      status,
      ts(done),
      ts(status === 'succeeded' ? (options.succeededAt ?? T0) : null),
      ts(status === 'claimed' ? at(100 * 365 * DAY) : null),
      Number(sequence),
    ],
  );
}

const prefixes = new WeakMap<object, string>();
function prefixOf(outbox: Outbox<Config>): string {
  return prefixes.get(outbox)!;
}

describeEachDialect('pruneEvents', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  let n = 0;
  async function open(): Promise<Outbox<Config>> {
    n += 1;
    const prefix = `p${n}_`;
    const outbox = await openOutbox(db, config, { clock: testClock().now, tablePrefix: prefix });
    prefixes.set(outbox, prefix);
    return outbox;
  }

  async function eventIds(outbox: Outbox<Config>): Promise<string[]> {
    return (await runtimeOf(outbox).store.readEvents({})).map((e) => e.sequence);
  }

  it('an event recorded under succeeded goes at the first prune once every delivery succeeded or was cancelled', async () => {
    const outbox = await open();
    const { sequence } = await outbox.fire('p.Consumed', { n: 1 });
    expect(await outbox.pruneEvents({ now: T0 })).toBe(0);
    await setStatus(db, outbox, sequence, 'succeeded', { receiverKey: 'r.consumed.one' });
    expect(await outbox.pruneEvents({ now: T0 })).toBe(0);
    await setStatus(db, outbox, sequence, 'cancelled', { receiverKey: 'r.consumed.two' });
    expect(await outbox.pruneEvents({ now: T0 })).toBe(1);
    expect(await eventIds(outbox)).toEqual([]);
    expect(await deliveryRows(outbox)).toEqual([]);
  });

  it('a dead letter keeps an event recorded under succeeded for the ordinary window, so it stays inspectable', async () => {
    const outbox = await open();
    const { sequence } = await outbox.fire('p.Consumed', { n: 1 });
    await setStatus(db, outbox, sequence, 'succeeded', { receiverKey: 'r.consumed.one' });
    await setStatus(db, outbox, sequence, 'dead', { receiverKey: 'r.consumed.two' });
    expect(await outbox.pruneEvents({ now: at(6 * DAY) })).toBe(0);
    expect(await outbox.pruneEvents({ now: at(7 * DAY + 1) })).toBe(1);
  });

  it('an event recorded under settled goes once every delivery is terminal, dead letters included', async () => {
    const outbox = await open();
    const { sequence } = await outbox.fire('p.Settles', { n: 1 });
    await setStatus(db, outbox, sequence, 'failed');
    expect(await outbox.pruneEvents({ now: T0 })).toBe(0);
    await setStatus(db, outbox, sequence, 'dead');
    expect(await outbox.pruneEvents({ now: T0 })).toBe(1);
  });

  it('an event with a window of its own goes past it, and olderThan neither shortens nor lengthens it', async () => {
    const outbox = await open();
    const short = await outbox.fire('p.Windowed', { n: 1 });
    const long = await outbox.fire('p.LongWindow', { n: 2 });
    await setStatus(db, outbox, short.sequence, 'succeeded');
    await setStatus(db, outbox, long.sequence, 'succeeded');
    expect(await outbox.pruneEvents({ now: at(12 * HOUR), olderThan: { hours: 1 } })).toBe(0);
    expect(await outbox.pruneEvents({ now: at(DAY + 1), olderThan: { days: 365 } })).toBe(1);
    expect(await eventIds(outbox)).toEqual([long.sequence]);
    // Past the ordinary window (7 days), not past its own 30: kept.
    expect(await outbox.pruneEvents({ now: at(8 * DAY) })).toBe(0);
    expect(await outbox.pruneEvents({ now: at(30 * DAY) })).toBe(1);
  });

  it('an ordinary event goes past settings.retentionDays, or past olderThan when given', async () => {
    const outbox = await open();
    const { sequence } = await outbox.fire('p.Kept', { n: 1 });
    await setStatus(db, outbox, sequence, 'succeeded');
    expect(await outbox.pruneEvents({ now: at(6 * DAY) })).toBe(0);
    expect(await outbox.pruneEvents({ now: at(6 * DAY), olderThan: { days: 7 } })).toBe(0);
    expect(await outbox.pruneEvents({ now: at(6 * DAY), olderThan: { days: 5 } })).toBe(1);
  });

  it('an event with a delivery still pending, failed or claimed is never pruned, however old', async () => {
    const outbox = await open();
    const kept = [];
    for (const status of ['pending', 'failed', 'claimed']) {
      const fired = await outbox.fire('p.Settles', { n: 1 });
      await setStatus(db, outbox, fired.sequence, status);
      const plain = await outbox.fire('p.Kept', { n: 1 });
      await setStatus(db, outbox, plain.sequence, status);
      kept.push(fired.sequence, plain.sequence);
    }
    expect(await outbox.pruneEvents({ now: at(1000 * DAY) })).toBe(0);
    expect(await eventIds(outbox)).toEqual(kept);
  });

  it('a suppressed event and one fired with no durable receivers are settled at once', async () => {
    const outbox = await open();
    await outbox.fire('p.Lonely', { n: 1 });
    await suppressed('p.Consumed', { reason: 'import' }, () => outbox.fire('p.Consumed', { n: 2 }));
    const plain = await outbox.fire('p.Plain', { n: 3 });
    expect(await deliveryRows(outbox)).toEqual([]);
    // Consumed at commit under a succeeded retention; the plain one follows the window.
    expect(await outbox.pruneEvents({ now: T0 })).toBe(2);
    expect(await eventIds(outbox)).toEqual([plain.sequence]);
    expect(await outbox.pruneEvents({ now: at(7 * DAY) })).toBe(1);
  });

  it('an event with more deliveries than a batch loses them chunk by chunk, each in its own transaction, and goes with the last', async () => {
    const outbox = await open();
    const { sequence } = await outbox.fire('p.Fanned', { n: 1 });
    await setStatus(db, outbox, sequence, 'succeeded');
    const batches: PruneBatch[] = [];
    const gone = await outbox.pruneEvents({
      now: at(8 * DAY),
      batchSize: 3,
      onBatch: (b) => batches.push(b),
    });
    expect(gone).toBe(1);
    expect(batches.map((b) => [b.events, b.deliveries])).toEqual([
      [0, 3],
      [0, 3],
      [1, 1],
    ]);
    expect(await deliveryRows(outbox)).toEqual([]);
  });

  it('a stop between chunks leaves the event with fewer deliveries, every one terminal, for the next prune', async () => {
    const outbox = await open();
    const { sequence } = await outbox.fire('p.Fanned', { n: 1 });
    await setStatus(db, outbox, sequence, 'dead');
    const stop = new AbortController();
    const gone = await outbox.pruneEvents({
      now: at(8 * DAY),
      batchSize: 3,
      signal: stop.signal,
      onBatch: () => stop.abort(),
    });
    expect(gone).toBe(0);
    const left = await deliveryRows(outbox);
    expect(left).toHaveLength(4);
    expect(left.every((r) => r.status === 'dead')).toBe(true);
    expect(await outbox.pruneEvents({ now: at(8 * DAY), batchSize: 3 })).toBe(1);
  });

  it('batches are bounded by rows: delivery rows and the event row together', async () => {
    const outbox = await open();
    for (let i = 0; i < 5; i++) {
      const { sequence } = await outbox.fire('p.Kept', { n: i });
      await setStatus(db, outbox, sequence, 'succeeded');
    }
    const batches: PruneBatch[] = [];
    const gone = await outbox.pruneEvents({
      now: at(8 * DAY),
      batchSize: 4,
      onBatch: (b) => batches.push(b),
    });
    expect(gone).toBe(5);
    expect(batches.map((b) => b.events)).toEqual([2, 2, 1]);
    expect(batches.at(-1)).toMatchObject({ totalEvents: 5, totalDeliveries: 5 });
  });

  it('each batch writes every receiver’s newest success among its rows to the last-success table, keeping the later one', async () => {
    const outbox = await open();
    const a = await outbox.fire('p.Consumed', { n: 1 });
    const b = await outbox.fire('p.Consumed', { n: 2 });
    await setStatus(db, outbox, a.sequence, 'succeeded', { succeededAt: at(HOUR) });
    await setStatus(db, outbox, b.sequence, 'succeeded', { succeededAt: at(2 * HOUR) });
    await setStatus(db, outbox, b.sequence, 'cancelled', { receiverKey: 'r.consumed.two' });
    expect(await outbox.pruneEvents({ now: at(3 * HOUR) })).toBe(2);
    const table = tableName(db, `${prefixOf(outbox)}receiver_last_success`);
    const toMs = (v: unknown) =>
      v instanceof Date ? v.getTime() : typeof v === 'number' ? v : Date.parse(String(v));
    const read = async () => {
      const rows = await sqlOf(db.sequelize).select<{
        receiver_key: string;
        succeeded_at: unknown;
      }>(`SELECT receiver_key, succeeded_at FROM ${table} ORDER BY receiver_key`, []);
      return rows.map((r) => [r.receiver_key, toMs(r.succeeded_at)]);
    };
    expect(await read()).toEqual([
      ['r.consumed.one', at(2 * HOUR).getTime()],
      ['r.consumed.two', at(HOUR).getTime()],
    ]);
    // An older success pruned later does not move a receiver's back; a newer one does.
    const c = await outbox.fire('p.Consumed', { n: 3 });
    await setStatus(db, outbox, c.sequence, 'succeeded', { succeededAt: at(30 * 60_000) });
    await setStatus(db, outbox, c.sequence, 'succeeded', {
      receiverKey: 'r.consumed.two',
      succeededAt: at(150 * 60_000),
    });
    expect(await outbox.pruneEvents({ now: at(3 * HOUR) })).toBe(1);
    expect(await read()).toEqual([
      ['r.consumed.one', at(2 * HOUR).getTime()],
      ['r.consumed.two', at(150 * 60_000).getTime()],
    ]);
  });

  it('limit counts events', async () => {
    const outbox = await open();
    for (let i = 0; i < 5; i++) await outbox.fire('p.Lonely', { n: i });
    expect(await outbox.pruneEvents({ now: T0, limit: 2 })).toBe(2);
    expect(await eventIds(outbox)).toHaveLength(3);
    expect(await outbox.pruneEvents({ now: T0, limit: 2, batchSize: 1 })).toBe(2);
    expect(await eventIds(outbox)).toHaveLength(1);
  });

  it('re-checks at the delete that an event is still due: one made owed again meanwhile is kept', async () => {
    const outbox = await open();
    const { sequence } = await outbox.fire('p.Kept', { n: 1 });
    await setStatus(db, outbox, sequence, 'succeeded');
    const store = runtimeOf(outbox).store;
    const window = { rule: 'retention' as const, now: at(8 * DAY), cutoff: at(DAY) };
    const due = await store.findDueEvents(window, 10);
    expect(due).toEqual([{ sequence, deliveries: 1 }]);
    await setStatus(db, outbox, sequence, 'pending'); // a replay, between the find and the delete
    expect(await store.deleteDueEvents([sequence], window)).toEqual({ events: 0, deliveries: 0 });
    expect(await eventIds(outbox)).toEqual([sequence]);
    // And a second pruner deleting what the first already took deletes nothing.
    await setStatus(db, outbox, sequence, 'succeeded');
    expect(await store.deleteDueEvents([sequence], window)).toEqual({ events: 1, deliveries: 1 });
    expect(await store.deleteDueEvents([sequence], window)).toEqual({ events: 0, deliveries: 0 });
  });

  it('reads the stop signal between batches', async () => {
    const outbox = await open();
    for (let i = 0; i < 4; i++) await outbox.fire('p.Lonely', { n: i });
    const stop = new AbortController();
    const gone = await outbox.pruneEvents({
      now: T0,
      batchSize: 2,
      signal: stop.signal,
      onBatch: () => stop.abort(),
    });
    expect(gone).toBe(2);
    expect(await eventIds(outbox)).toHaveLength(2);
  });

  it('dryRun counts what is due and deletes nothing', async () => {
    const outbox = await open();
    for (let i = 0; i < 3; i++) await outbox.fire('p.Lonely', { n: i });
    await outbox.fire('p.Kept', { n: 9 });
    expect(await outbox.pruneEvents({ now: T0, dryRun: true })).toBe(3);
    expect(await outbox.pruneEvents({ now: T0, dryRun: true, limit: 2 })).toBe(2);
    expect(await eventIds(outbox)).toHaveLength(4);
  });

  it('refuses bad options, naming them, before anything is deleted', async () => {
    const outbox = await open();
    await outbox.fire('p.Lonely', { n: 1 });
    await expect(outbox.pruneEvents({ batchSize: 0 })).rejects.toThrow(
      'pruneEvents({ batchSize }) must be an integer from 1 to 100000 (got 0)',
    );
    await expect(outbox.pruneEvents({ limit: 1.5 })).rejects.toThrow(ConfigurationError);
    await expect(
      outbox.pruneEvents({ olderThan: 7 as unknown as { days: number } }),
    ).rejects.toThrow('pruneEvents({ olderThan }) must be a duration such as { days: 7 } (got 7)');
    expect(await eventIds(outbox)).toHaveLength(1);
  });

  it('cleanupDeadLettered deletes dead rows dead-lettered before the window, batch by batch, and nothing else', async () => {
    const outbox = await open();
    const dead = await outbox.fire('p.Fanned', { n: 1 });
    await setStatus(db, outbox, dead.sequence, 'dead');
    const fresh = await outbox.fire('p.Kept', { n: 2 });
    await setStatus(db, outbox, fresh.sequence, 'dead');
    const t = tableNames(prefixOf(outbox), db.outboxOptions.schema);
    const recent = dialectOf(db.sequelize).sql.value(at(20 * DAY), 'timestamp');
    await sqlOf(db.sequelize).run(
      `UPDATE ${t.deliveries} SET completed_at = $1 WHERE event_id = $2`,
      [recent, Number(fresh.sequence)],
    );
    const pending = await outbox.fire('p.Kept', { n: 3 });
    const batches: PruneBatch[] = [];
    const gone = await outbox.cleanupDeadLettered({
      olderThan: { days: 10 },
      now: at(25 * DAY),
      batchSize: 3,
      onBatch: (b) => batches.push(b),
    });
    expect(gone).toBe(7);
    expect(batches.map((b) => b.deliveries)).toEqual([3, 3, 1]);
    expect((await deliveryRows(outbox)).map((r) => [r.eventSequence, r.status])).toEqual([
      [fresh.sequence, 'dead'],
      [pending.sequence, 'pending'],
    ]);
    await expect(outbox.cleanupDeadLettered({} as never)).rejects.toThrow(
      'cleanupDeadLettered({ olderThan }) is required',
    );
  });

  it('cleanupPublished deletes fully delivered events recorded before the window, whatever their retention', async () => {
    const outbox = await open();
    const long = await outbox.fire('p.LongWindow', { n: 1 });
    await setStatus(db, outbox, long.sequence, 'succeeded');
    const dead = await outbox.fire('p.Kept', { n: 2 });
    await setStatus(db, outbox, dead.sequence, 'dead');
    const open_ = await outbox.fire('p.Kept', { n: 3 });
    expect(await outbox.cleanupPublished({ olderThan: { days: 2 }, now: at(DAY) })).toBe(0);
    expect(await outbox.cleanupPublished({ olderThan: { days: 2 }, now: at(3 * DAY) })).toBe(1);
    expect(await eventIds(outbox)).toEqual([dead.sequence, open_.sequence]);
  });
});

describePostgres('pruneEvents under concurrency', (dialect) => {
  let db: TestDatabase;
  let other: Sequelize;
  beforeAll(async () => {
    db = await dialect.open();
    other = new Sequelize(db.url, { logging: false });
  });
  afterAll(async () => {
    await other.close();
    await db.cleanup();
  });

  it('a prune during a cancel loses nothing and takes the event after', async () => {
    const outbox = await openOutbox(db, config, { clock: testClock().now, tablePrefix: 'cc_' });
    prefixes.set(outbox, 'cc_');
    const { sequence } = await outbox.fire('p.Consumed', { n: 1 });
    await setStatus(db, outbox, sequence, 'succeeded', { receiverKey: 'r.consumed.one' });
    const t = tableNames('cc_', db.outboxOptions.schema);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The cancel: the event locked, its owed row withdrawn, not yet committed.
    const cancel = other.transaction(async (transaction) => {
      await other.query(lockEventIdsSql(t), { bind: [[sequence]], transaction });
      await other.query(
        `UPDATE ${t.deliveries} SET status = 'cancelled', completed_at = now() WHERE event_id = $1 AND status = 'pending'`,
        { bind: [sequence], transaction },
      );
      await held;
    });
    // Owed until the cancel commits: the prune leaves it.
    expect(await outbox.pruneEvents({ now: T0 })).toBe(0);
    release();
    await cancel;
    expect((await deliveryRows(outbox)).map((r) => r.status)).toEqual(['succeeded', 'cancelled']);
    expect(await outbox.pruneEvents({ now: T0 })).toBe(1);
    expect(await deliveryRows(outbox)).toEqual([]);
  });

  it('a prune waits for the event lock of a replay and then keeps the event it made owed', async () => {
    const outbox = await openOutbox(db, config, { clock: testClock().now, tablePrefix: 'rp_' });
    prefixes.set(outbox, 'rp_');
    const { sequence } = await outbox.fire('p.Settles', { n: 1 });
    await setStatus(db, outbox, sequence, 'dead');
    const t = tableNames('rp_', db.outboxOptions.schema);
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const replay = other.transaction(async (transaction) => {
      await other.query(lockEventIdsSql(t), { bind: [[sequence]], transaction });
      locked();
      await held;
      await other.query(
        `UPDATE ${t.deliveries} SET status = 'pending', completed_at = NULL WHERE event_id = $1`,
        { bind: [sequence], transaction },
      );
    });
    await isLocked;
    // The prune finds the event due (the replay has written nothing yet), then waits for
    // the lock at its delete.
    const pruning = outbox.pruneEvents({ now: T0 });
    await waitFor(async () => {
      const [rows] = (await db.sequelize.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%' AND query LIKE '%"rp_events"%'`,
      )) as [{ n: number }[], unknown];
      return rows[0]!.n > 0;
    }, 'the prune to wait for the event lock');
    release();
    await replay;
    expect(await pruning).toBe(0);
    expect((await deliveryRows(outbox)).map((r) => r.status)).toEqual(['pending']);
  });

  it('two prunes at once delete each event once', async () => {
    const outbox = await openOutbox(db, config, { clock: testClock().now, tablePrefix: 'tw_' });
    const second = await openOutbox(db, config, {
      clock: testClock().now,
      tablePrefix: 'tw_',
      sequelize: other,
    });
    await outbox.fireMany(
      Array.from({ length: 60 }, (_, i) => ({ name: 'p.Lonely' as const, payload: { n: i } })),
    );
    const [a, b] = await Promise.all([
      outbox.pruneEvents({ now: T0, batchSize: 5 }),
      second.pruneEvents({ now: T0, batchSize: 5 }),
    ]);
    expect(a + b).toBe(60);
    expect(await runtimeOf(outbox).store.readEvents({})).toEqual([]);
  });
});
