import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineOutbox,
  event,
  type OutboxEvent,
  PermanentFailure,
  receiver,
  ValidationError,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { openOutbox, rowsOf } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const payload = z.object({ n: z.number() });

/** Every delivery of an event with `fail: true` in its payload dies at once. */
function opsConfig(seen: OutboxEvent[], failing: Set<number>) {
  return defineOutbox({
    events: { 'shop.Placed': event({ schema: payload }) },
    receivers: {
      'shop.log': receiver('shop.Placed', {
        handle: (e) => {
          const n = (e.payload as { n: number }).n;
          if (failing.has(n)) throw new PermanentFailure(`refused ${n}`);
          seen.push(e);
        },
      }),
    },
    eventColumns: { order_id: { type: 'bigint', index: true }, region: { type: 'text' } },
  });
}

describeEachDialect('event columns: operations narrowed by columns', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('health, deadLetters and requeueDead take { columns } (equality; null for none); other events’ rows are left alone', async () => {
    const seen: OutboxEvent[] = [];
    const failing = new Set([1, 2, 3, 4]);
    const outbox = await openOutbox(db, opsConfig(seen, failing));
    await outbox.fire('shop.Placed', { n: 1 }, { columns: { order_id: 42, region: 'eu' } });
    await outbox.fire('shop.Placed', { n: 2 }, { columns: { order_id: 42, region: 'us' } });
    await outbox.fire('shop.Placed', { n: 3 }, { columns: { order_id: 7 } });
    await outbox.fire('shop.Placed', { n: 4 });
    await drainOutbox(outbox);
    expect(await outbox.deadLetters()).toHaveLength(4);
    const of42 = await outbox.deadLetters({ columns: { order_id: 42 } });
    expect(of42.map((d) => d.eventSequence).sort()).toHaveLength(2);
    expect(await outbox.deadLetters({ columns: { order_id: 42, region: 'us' } })).toHaveLength(1);
    expect(await outbox.deadLetters({ columns: { order_id: null } })).toHaveLength(1);
    expect(await outbox.deadLetters({ columns: { order_id: 1000 } })).toEqual([]);

    expect((await outbox.health({ columns: { order_id: 42 } })).dead).toBe(2);
    expect((await outbox.health({ columns: { region: 'us' } })).dead).toBe(1);
    expect((await outbox.health({ columns: { order_id: 1000 } })).dead).toBe(0);
    expect(await outbox.requeueDead({ columns: { order_id: 42 }, dryRun: true })).toBe(2);
    failing.clear();
    expect(await outbox.requeueDead({ columns: { order_id: '42' } })).toBe(2);
    await drainOutbox(outbox);
    expect(seen.map((e) => (e.payload as { n: number }).n).sort()).toEqual([1, 2]);
    const statuses = (await rowsOf(outbox, 'shop.log')).map((r) => r.status);
    expect(statuses).toEqual(['succeeded', 'succeeded', 'dead', 'dead']);
  });

  it('replayEvents and cancelDeliveries with { columns } leave another event untouched and report it missing', async () => {
    const seen: OutboxEvent[] = [];
    const outbox = await openOutbox(db, opsConfig(seen, new Set()));
    const a = await outbox.fire('shop.Placed', { n: 1 }, { columns: { order_id: 42 } });
    const b = await outbox.fire('shop.Placed', { n: 2 }, { columns: { order_id: 7 } });
    await drainOutbox(outbox);
    const replayed = await outbox.replayEvents([a, b], { columns: { order_id: 42 } });
    expect(replayed).toEqual({ reopened: 1, added: 0, missing: [b.id] });
    const cancelled = await outbox.cancelDeliveries([a, b], { columns: { order_id: 7 } });
    expect(cancelled).toEqual({ cancelled: 0, inFlight: 0, missing: [a.id] });
    const cancelledA = await outbox.cancelDeliveries([a, b], { columns: { order_id: 42 } });
    expect(cancelledA).toEqual({ cancelled: 1, inFlight: 0, missing: [b.id] });
  });

  it('pruneEvents({ columns }) deletes only the due events holding the values', async () => {
    const outbox = await openOutbox(db, opsConfig([], new Set()));
    await outbox.fire('shop.Placed', { n: 1 }, { columns: { order_id: 42 } });
    await outbox.fire('shop.Placed', { n: 2 }, { columns: { order_id: 42 } });
    await outbox.fire('shop.Placed', { n: 3 }, { columns: { order_id: 7 } });
    await drainOutbox(outbox);
    const now = new Date(Date.now() + 40 * 86_400_000);
    const olderThan = { days: 30 };
    expect(
      await outbox.pruneEvents({ now, olderThan, columns: { order_id: 42 }, dryRun: true }),
    ).toBe(2);
    expect(await outbox.pruneEvents({ now, olderThan, columns: { order_id: 42 } })).toBe(2);
    const left = await runtimeOf(outbox).store.readEvents({});
    expect(left.map((e) => e.payload as { n: number } | string)).toHaveLength(1);
    expect(await outbox.pruneEvents({ now, olderThan, columns: { order_id: 1 } })).toBe(0);
  });

  it('an operation’s columns are checked as fire’s: an undeclared column or a wrong type is a ValidationError', async () => {
    const outbox = await openOutbox(db, opsConfig([], new Set()));
    await expect(outbox.deadLetters({ columns: { order: 1 } })).rejects.toThrow(
      /deadLetters\(\): columns\.order is not a declared event column \(declared: order_id, region\)/,
    );
    await expect(outbox.requeueDead({ columns: { order_id: 'x' } })).rejects.toBeInstanceOf(
      ValidationError,
    );
    await expect(outbox.deadLetters({ columns: {} })).rejects.toThrow(/at least one event column/);
  });
});
