import { DataTypes, Sequelize } from 'sequelize';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  createOutbox,
  defineOutbox,
  event,
  type Outbox,
  type OutboxWakeup,
  receiver,
  silentLogger,
  ValidationError,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';

const OrderPlaced = event({
  schema: z.object({
    orderId: z.string(),
    totalCents: z.number().int(),
    meta: z.record(z.string(), z.unknown()).optional(),
  }),
});
const Wide = event({ schema: z.object({ value: z.unknown() }) });

/** A wakeup that records what it was asked to signal. */
function recordingWakeup(): OutboxWakeup & { signals: string[][] } {
  const signals: string[][] = [];
  return {
    name: 'recording',
    capabilities: {},
    signals,
    signal: (topics) => void signals.push([...topics]),
    listen: async () => async () => {},
    close: async () => {},
  };
}

describeEachDialect('fire()', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox<typeof config>;
  let wakeup: ReturnType<typeof recordingWakeup>;
  const inlineSeen: string[] = [];
  const onCommitSeen: string[] = [];
  let inlineShouldThrow = false;
  let onCommitShouldThrow = false;
  let Business: ReturnType<Sequelize['define']>;

  const config = defineOutbox({
    events: { 'shop.OrderPlaced': OrderPlaced, 'misc.Wide': Wide },
    receivers: {
      'mail.confirm': receiver(OrderPlaced, { handle: () => {}, maxAttempts: 3 }),
      'bus.forward': receiver(OrderPlaced, { deliver: async () => {} }),
      'stock.reserve': receiver(OrderPlaced, {
        mode: 'inline',
        handle: async (e, ctx) => {
          if (inlineShouldThrow) throw new Error('out of stock');
          expect(ctx.transaction).toBeDefined();
          inlineSeen.push(e.payload.orderId);
        },
      }),
      'log.placed': receiver(OrderPlaced, {
        mode: 'onCommit',
        handle: (e) => {
          if (onCommitShouldThrow) throw new Error('log sink down');
          onCommitSeen.push(e.payload.orderId);
        },
      }),
    },
  });

  beforeAll(async () => {
    db = await dialect.open();
    wakeup = recordingWakeup();
    outbox = createOutbox(config, { ...db.outboxOptions, wakeup, logger: silentLogger });
    await outbox.migrate();
    Business = db.sequelize.define(
      'business_row',
      { name: DataTypes.STRING },
      {
        tableName: `biz_${Math.random().toString(36).slice(2, 8)}`,
        ...(db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {}),
      },
    );
    await Business.sync();
  });
  afterEach(() => {
    inlineShouldThrow = false;
    onCommitShouldThrow = false;
    inlineSeen.length = 0;
    onCommitSeen.length = 0;
    wakeup.signals.length = 0;
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  const store = () => runtimeOf(outbox).store;
  const eventCount = async () => (await store().readEvents({})).length;
  const deliveriesOf = async (sequence: string) =>
    store().readDeliveries({ eventSequence: sequence });

  it('records the event and one delivery row per durable receiver when the transaction commits', async () => {
    const fired = await db.sequelize.transaction(async (transaction) => {
      await Business.create({ name: 'order o1' }, { transaction });
      return outbox.fire(
        'shop.OrderPlaced',
        { orderId: 'o1', totalCents: 1250 },
        { transaction, orderingKey: 'order:o1' },
      );
    });
    const rows = await deliveriesOf(fired.sequence);
    expect(rows.map((r) => [r.receiverKey, r.status, r.attempts, r.maxAttempts])).toEqual([
      ['bus.forward', 'pending', 0, 5],
      ['mail.confirm', 'pending', 0, 3],
    ]);
    expect(fired.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/); // a UUIDv7
    expect(fired.orderingKey).toBe('order:o1');
  });

  it('records nothing, runs no onCommit receiver and sends no signal for a rollback', async () => {
    const before = await eventCount();
    await expect(
      db.sequelize.transaction(async (transaction) => {
        await Business.create({ name: 'doomed' }, { transaction });
        await outbox.fire(
          'shop.OrderPlaced',
          { orderId: 'rolled', totalCents: 1 },
          { transaction },
        );
        throw new Error('business rule failed');
      }),
    ).rejects.toThrow('business rule failed');
    expect(await eventCount()).toBe(before);
    expect(await Business.count({ where: { name: 'doomed' } })).toBe(0);
    expect(onCommitSeen).toEqual([]);
    expect(wakeup.signals).toEqual([]);
  });

  it('outside a transaction, fire commits at once', async () => {
    const before = await eventCount();
    const fired = await outbox.fire('shop.OrderPlaced', { orderId: 'solo', totalCents: 5 });
    expect(await eventCount()).toBe(before + 1);
    expect(await deliveriesOf(fired.sequence)).toHaveLength(2);
    expect(onCommitSeen).toEqual(['solo']);
  });

  it('runs inline receivers inside the transaction, and their throw aborts it', async () => {
    await db.sequelize.transaction(async (transaction) => {
      await outbox.fire('shop.OrderPlaced', { orderId: 'in1', totalCents: 1 }, { transaction });
      expect(inlineSeen).toEqual(['in1']);
    });
    inlineShouldThrow = true;
    const before = await eventCount();
    await expect(
      db.sequelize.transaction(async (transaction) => {
        await Business.create({ name: 'needs stock' }, { transaction });
        await outbox.fire('shop.OrderPlaced', { orderId: 'in2', totalCents: 1 }, { transaction });
      }),
    ).rejects.toThrow('out of stock');
    expect(await eventCount()).toBe(before);
    expect(await Business.count({ where: { name: 'needs stock' } })).toBe(0);
  });

  it('runs onCommit receivers after the commit, and their throw is logged, never raised', async () => {
    const order: string[] = [];
    await db.sequelize.transaction(async (transaction) => {
      await outbox.fire('shop.OrderPlaced', { orderId: 'oc1', totalCents: 1 }, { transaction });
      order.push(`in transaction: ${onCommitSeen.length}`);
    });
    order.push(`after commit: ${onCommitSeen.join(',')}`);
    expect(order).toEqual(['in transaction: 0', 'after commit: oc1']);

    onCommitShouldThrow = true;
    const failures: string[] = [];
    const off = outbox.on('fire:onCommitFailed', (f) =>
      failures.push(`${f.receiverKey} ${f.eventId}`),
    );
    const fired = await outbox.fire('shop.OrderPlaced', { orderId: 'oc2', totalCents: 1 });
    expect(fired).toMatchObject({ duplicate: false });
    off();
    expect(failures).toEqual([`log.placed ${fired.id}`]);
  });

  it('signals the wakeup once per transaction, after commit, with the topics written', async () => {
    await db.sequelize.transaction(async (transaction) => {
      await outbox.fire('shop.OrderPlaced', { orderId: 'w1', totalCents: 1 }, { transaction });
      await outbox.fire('shop.OrderPlaced', { orderId: 'w2', totalCents: 1 }, { transaction });
      expect(wakeup.signals).toEqual([]);
    });
    expect(wakeup.signals).toEqual([['shop.OrderPlaced']]);
  });

  describe('bad input is refused before anything is written', () => {
    async function refusedInTransaction(
      fn: (transaction: import('sequelize').Transaction) => Promise<unknown>,
    ) {
      const before = await eventCount();
      const error = await db.sequelize.transaction(async (transaction) => {
        const caught = await fn(transaction).then(
          () => undefined,
          (e: unknown) => e,
        );
        // The caller's transaction is still usable (not aborted on PostgreSQL).
        await Business.create({ name: 'still usable' }, { transaction });
        return caught;
      });
      expect(await eventCount()).toBe(before);
      expect(error).toBeInstanceOf(ValidationError);
      return error as ValidationError;
    }

    it('a payload failing its schema', async () => {
      const error = await refusedInTransaction((transaction) =>
        // @ts-expect-error: totalCents must be a number
        outbox.fire('shop.OrderPlaced', { orderId: 'x', totalCents: 'lots' }, { transaction }),
      );
      expect(error.message).toContain('shop.OrderPlaced payload.totalCents');
      expect(error.path).toBe('payload.totalCents');
    });

    it('an unknown event name, with a suggestion', async () => {
      const error = await refusedInTransaction((transaction) =>
        // @ts-expect-error: not a declared event
        outbox.fire('shop.OrderPlacd', { orderId: 'x', totalCents: 1 }, { transaction }),
      );
      expect(error.message).toContain(
        'unknown event "shop.OrderPlacd" — did you mean "shop.OrderPlaced"?',
      );
    });

    it('headers with an empty name', async () => {
      const error = await refusedInTransaction((transaction) =>
        outbox.fire(
          'shop.OrderPlaced',
          { orderId: 'x', totalCents: 1 },
          { transaction, headers: { '': 'x' } },
        ),
      );
      expect(error.message).toContain('headers has an empty name');
    });

    it('NaN or Infinity at any depth of the payload', async () => {
      const error = await refusedInTransaction((transaction) =>
        outbox.fire(
          'shop.OrderPlaced',
          { orderId: 'x', totalCents: 1, meta: { deep: [{ ratio: Number.NaN }] } },
          { transaction },
        ),
      );
      expect(error.message).toContain('payload.meta.deep[0].ratio is NaN');
      const inf = await refusedInTransaction((transaction) =>
        outbox.fire('misc.Wide', { value: { a: Number.POSITIVE_INFINITY } }, { transaction }),
      );
      expect(inf.message).toContain('payload.value.a is Infinity');
    });

    it('a value JSON cannot hold (a Map)', async () => {
      const error = await refusedInTransaction((transaction) =>
        outbox.fire('misc.Wide', { value: new Map([[1, 2]]) }, { transaction }),
      );
      expect(error.message).toContain('payload.value is a Map');
    });

    it('a NUL character, which PostgreSQL jsonb cannot store', async () => {
      const error = await refusedInTransaction((transaction) =>
        outbox.fire('misc.Wide', { value: 'a\u0000b' }, { transaction }),
      );
      expect(error.message).toContain('contains a NUL character');
    });

    it('an idempotency key longer than the column', async () => {
      const error = await refusedInTransaction((transaction) =>
        outbox.fire(
          'shop.OrderPlaced',
          { orderId: 'x', totalCents: 1 },
          { transaction, idempotencyKey: 'k'.repeat(256) },
        ),
      );
      expect(error.message).toContain('idempotencyKey must be a string of 1 to 255 characters');
    });

    it('a transaction of another Sequelize instance', async () => {
      const other = db.connectAgain();
      const before = await eventCount();
      await expect(
        other.transaction((transaction) =>
          outbox.fire('shop.OrderPlaced', { orderId: 'x', totalCents: 1 }, { transaction }),
        ),
      ).rejects.toThrow(/belongs to another Sequelize instance/);
      expect(await eventCount()).toBe(before);
    });
  });

  describe('idempotencyKey', () => {
    it('a repeat returns the stored event (its own payload) and writes nothing, without aborting the transaction', async () => {
      const first = await outbox.fire(
        'shop.OrderPlaced',
        { orderId: 'first', totalCents: 1 },
        { idempotencyKey: 'idem-1' },
      );
      const before = await eventCount();
      wakeup.signals.length = 0;
      const again = await db.sequelize.transaction(async (transaction) => {
        const repeat = await outbox.fire(
          'shop.OrderPlaced',
          { orderId: 'second', totalCents: 2 },
          { transaction, idempotencyKey: 'idem-1' },
        );
        await Business.create({ name: 'after a duplicate' }, { transaction }); // the transaction still works
        return repeat;
      });
      expect(again).toMatchObject({
        duplicate: true,
        id: first.id,
        sequence: first.sequence,
        payload: { orderId: 'first', totalCents: 1 },
      });
      expect(await eventCount()).toBe(before);
      expect(await deliveriesOf(first.sequence)).toHaveLength(2);
      expect(wakeup.signals).toEqual([]);
      expect(onCommitSeen).toEqual(['first']);
    });

    it('a key freed by a rolled-back transaction can be used again', async () => {
      await expect(
        db.sequelize.transaction(async (transaction) => {
          await outbox.fire(
            'shop.OrderPlaced',
            { orderId: 'gone', totalCents: 1 },
            { transaction, idempotencyKey: 'idem-freed' },
          );
          throw new Error('rollback');
        }),
      ).rejects.toThrow('rollback');
      const fired = await outbox.fire(
        'shop.OrderPlaced',
        { orderId: 'kept', totalCents: 1 },
        { idempotencyKey: 'idem-freed' },
      );
      expect(fired.duplicate).toBe(false);
      expect(fired.payload.orderId).toBe('kept');
    });
  });

  describe('fireMany()', () => {
    it('writes many events in the order given, with their delivery rows, and returns them in that order', async () => {
      const fired = await outbox.fireMany([
        { name: 'shop.OrderPlaced', payload: { orderId: 'm1', totalCents: 1 }, orderingKey: 'k' },
        { name: 'misc.Wide', payload: { value: 1 } },
        { name: 'shop.OrderPlaced', payload: { orderId: 'm2', totalCents: 2 }, orderingKey: 'k' },
      ]);
      expect(fired.map((f) => f.name)).toEqual([
        'shop.OrderPlaced',
        'misc.Wide',
        'shop.OrderPlaced',
      ]);
      const sequences = fired.map((f) => BigInt(f.sequence));
      expect(sequences[0] < sequences[1] && sequences[1] < sequences[2]).toBe(true);
      expect(await deliveriesOf(fired[0].sequence)).toHaveLength(2);
      expect(await deliveriesOf(fired[1].sequence)).toHaveLength(0);
    });

    it('returns the stored event for a key already stored or given twice', async () => {
      const stored = await outbox.fire(
        'shop.OrderPlaced',
        { orderId: 's', totalCents: 1 },
        { idempotencyKey: 'many-1' },
      );
      const fired = await outbox.fireMany([
        {
          name: 'shop.OrderPlaced',
          payload: { orderId: 'n1', totalCents: 1 },
          idempotencyKey: 'many-1',
        },
        {
          name: 'shop.OrderPlaced',
          payload: { orderId: 'n2', totalCents: 1 },
          idempotencyKey: 'many-2',
        },
        {
          name: 'shop.OrderPlaced',
          payload: { orderId: 'n3', totalCents: 1 },
          idempotencyKey: 'many-2',
        },
      ]);
      expect(fired.map((f) => [f.duplicate, (f.payload as { orderId: string }).orderId])).toEqual([
        [true, 's'],
        [false, 'n2'],
        [true, 'n2'],
      ]);
      expect(fired[0].id).toBe(stored.id);
      expect(fired[2].id).toBe(fired[1].id);
    });

    it('validates every message before writing any', async () => {
      const before = await eventCount();
      await expect(
        outbox.fireMany([
          { name: 'shop.OrderPlaced', payload: { orderId: 'ok', totalCents: 1 } },
          // @ts-expect-error: a wrong payload
          { name: 'shop.OrderPlaced', payload: { orderId: 3 } },
        ]),
      ).rejects.toThrow(/fireMany\(\)\[1\]/);
      expect(await eventCount()).toBe(before);
    });
  });

  it('round-trips unicode, quotes and backslashes in payloads', async () => {
    const tricky = 'ünï 😀 "quoted" \\ back\\slash {braces} ,comma \\u0000-as-text';
    const fired = await outbox.fire('misc.Wide', { value: { tricky } });
    const [stored] = await store().readEvents({ sequences: [fired.sequence] });
    const payload =
      typeof stored.payload === 'string' ? JSON.parse(stored.payload) : stored.payload;
    expect(payload).toEqual({ value: { tricky } });
  });

  it('stores headers and occurredAt, and encodes dates, bigints and bytes as the JSON table says', async () => {
    const occurredAt = new Date('2026-01-02T03:04:05.678Z');
    const fired = await outbox.fire(
      'misc.Wide',
      {
        value: {
          at: new Date('2026-05-06T07:08:09.000Z'),
          big: 12345678901234567890n,
          bytes: Buffer.from('hi'),
          price: { toJSON: () => '12.50' },
        },
      },
      { headers: { traceparent: '00-abc-01', author: { id: 7 } }, occurredAt },
    );
    const [stored] = await store().readEvents({ sequences: [fired.sequence] });
    const payload =
      typeof stored.payload === 'string' ? JSON.parse(stored.payload) : stored.payload;
    const headers =
      typeof stored.headers === 'string' ? JSON.parse(stored.headers) : stored.headers;
    expect(payload).toEqual({
      value: {
        at: '2026-05-06T07:08:09.000Z',
        big: '12345678901234567890',
        bytes: 'aGk=',
        price: '12.50',
      },
    });
    expect(headers).toEqual({ traceparent: '00-abc-01', author: { id: 7 } });
    expect(stored.occurredAt.toISOString()).toBe(occurredAt.toISOString());
  });
});

describe('fire() with Sequelize CLS [sqlite]', () => {
  it('joins the transaction the CLS namespace carries', async () => {
    const { createNamespace } = await import('cls-hooked');
    const { sqliteTestDatabase } = await import('../../testing/databases.js');
    Sequelize.useCLS(createNamespace(`outboxkit-test-${Math.random()}`));
    const db = await sqliteTestDatabase();
    try {
      const config = defineOutbox({
        events: { 'a.B': event({ schema: z.object({ n: z.number() }) }) },
      });
      const outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger });
      await outbox.migrate();
      await expect(
        db.sequelize.transaction(async () => {
          await outbox.fire('a.B', { n: 1 });
          throw new Error('roll it back');
        }),
      ).rejects.toThrow('roll it back');
      expect(await runtimeOf(outbox).store.readEvents({})).toHaveLength(0);
      await db.sequelize.transaction(async () => {
        await outbox.fire('a.B', { n: 2 });
      });
      expect(await runtimeOf(outbox).store.readEvents({})).toHaveLength(1);
    } finally {
      (Sequelize as unknown as { _cls: unknown })._cls = undefined;
      await db.cleanup();
    }
  });
});

describe.skipIf(!inject('pgAvailable'))('idempotencyKey under concurrency [postgres]', () => {
  it('a concurrent transaction firing the same key waits for the first and then gets its event', async () => {
    const { postgresTestSchema } = await import('../../testing/databases.js');
    const db = await postgresTestSchema();
    try {
      const config = defineOutbox({
        events: { 'a.B': event({ schema: z.object({ n: z.number() }) }) },
      });
      const first = createOutbox(config, {
        ...db.outboxOptions,
        wakeup: null,
        logger: silentLogger,
      });
      await first.migrate();
      const second = createOutbox(config, {
        ...db.outboxOptions,
        sequelize: db.connectAgain(),
        wakeup: null,
        logger: silentLogger,
      });
      let releaseFirst!: () => void;
      const firstMayCommit = new Promise<void>((resolve) => {
        releaseFirst = resolve;
      });
      const a = db.sequelize.transaction(async (transaction) => {
        const fired = await first.fire('a.B', { n: 1 }, { transaction, idempotencyKey: 'race' });
        await firstMayCommit;
        return fired;
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const b = second.fire('a.B', { n: 2 }, { idempotencyKey: 'race' });
      let bDone = false;
      void b.then(() => {
        bDone = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(bDone).toBe(false); // waiting on the first transaction's key
      releaseFirst();
      const [fa, fb] = await Promise.all([a, b]);
      expect(fb).toMatchObject({ duplicate: true, id: fa.id, payload: { n: 1 } });
    } finally {
      await db.cleanup();
    }
  });
});
