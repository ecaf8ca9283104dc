import { QueryTypes } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver } from '../src/index.js';
import type { TestDatabase } from '../testing/databases.js';
import { assertFired, drainOutbox } from '../testing/index.js';
import { describeEachDialect } from './support/dialects.js';

describeEachDialect('smoke', (dialect) => {
  let db: TestDatabase;
  const seen: string[] = [];
  const OrderPlaced = event({ schema: z.object({ orderId: z.string(), at: z.coerce.date() }) });
  const config = defineOutbox({
    events: { 'shop.OrderPlaced': OrderPlaced },
    receivers: {
      'mail.confirm': receiver(OrderPlaced, { handle: (e) => void seen.push(e.payload.orderId) }),
      'bus.forward': receiver('shop.OrderPlaced', { deliver: async () => {} }),
    },
  });
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('fires, drains and asserts', async () => {
    const outbox = createOutbox(config, db.outboxOptions);
    await outbox.migrate();
    await outbox.migrate();
    const fired = await outbox.fire('shop.OrderPlaced', { orderId: 'o1', at: new Date() });
    expect(fired.duplicate).toBe(false);
    const again = await outbox.fire(
      'shop.OrderPlaced',
      { orderId: 'o2', at: new Date() },
      { idempotencyKey: 'k1' },
    );
    const dup = await outbox.fire(
      'shop.OrderPlaced',
      { orderId: 'o3', at: new Date() },
      { idempotencyKey: 'k1' },
    );
    expect(dup.duplicate).toBe(true);
    expect(dup.id).toBe(again.id);
    expect((dup.payload as { orderId: string }).orderId).toBe('o2');
    const counts = await drainOutbox(outbox);
    expect(counts.succeeded).toBe(4);
    expect(seen).toEqual(['o1', 'o2']);
    const payloads = await assertFired(outbox, 'shop.OrderPlaced', { times: 2 });
    expect(payloads[0]).toMatchObject({ orderId: 'o1' });
    await outbox.close();
  });

  it('a relay run untilIdle delivers what is owed and returns at the first empty claim', async () => {
    const outbox = createOutbox(config, db.outboxOptions);
    await outbox.fire('shop.OrderPlaced', { orderId: 'idle-1', at: new Date() });
    await outbox.fire('shop.OrderPlaced', { orderId: 'idle-2', at: new Date() });
    const report = await outbox.runRelay({ untilIdle: true, pollIntervalMs: 60_000 });
    expect(report).toMatchObject({ succeeded: 4, passes: 2 });
    expect(seen.slice(-2)).toEqual(['idle-1', 'idle-2']);
    expect((await outbox.countDeliveries()).pending).toBe(0);
    await outbox.close();
  });

  it('fire and handlers work the same without prepared statements', async () => {
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      preparedStatements: false,
      wakeup: null,
    });
    const before = seen.length;
    await outbox.fire('shop.OrderPlaced', { orderId: 'unprepared', at: new Date() });
    await drainOutbox(outbox);
    expect(seen.slice(before)).toEqual(['unprepared']);
    if (dialect.name === 'postgres') {
      // A fresh connection, which no earlier test has prepared anything on.
      const fresh = db.connectAgain();
      const unprepared = createOutbox(config, {
        ...db.outboxOptions,
        sequelize: fresh,
        preparedStatements: false,
        wakeup: null,
      });
      const names = await fresh.transaction(async (transaction) => {
        await unprepared.fire(
          'shop.OrderPlaced',
          { orderId: 'still-unprepared', at: new Date() },
          { transaction },
        );
        return fresh.query<{ name: string }>('SELECT name FROM pg_prepared_statements', {
          type: QueryTypes.SELECT,
          transaction,
        });
      });
      expect(names.filter((n) => n.name.startsWith('outboxkit_insert_'))).toEqual([]);
    }
  });

  // PostgreSQL only (declared only there, so SQLite shows no skipped test).
  if (dialect.name === 'postgres')
    it('fire() prepares its statement on the transaction connection', async () => {
      const outbox = createOutbox(config, { ...db.outboxOptions, wakeup: null });
      const names = await db.sequelize.transaction(async (transaction) => {
        await outbox.fire(
          'shop.OrderPlaced',
          { orderId: 'prepared', at: new Date() },
          { transaction },
        );
        return db.sequelize.query<{ name: string }>('SELECT name FROM pg_prepared_statements', {
          type: QueryTypes.SELECT,
          transaction,
        });
      });
      expect(names.some((n) => n.name.startsWith('outboxkit_insert_'))).toBe(true);
    });

  it('describes itself: catalogue, whatListensTo, listensFor', () => {
    const outbox = createOutbox(config, db.outboxOptions);
    expect(outbox.catalogue().events.map((e) => e.name)).toEqual(['shop.OrderPlaced']);
    expect(outbox.whatListensTo('shop.OrderPlaced').map((r) => r.key)).toEqual([
      'bus.forward',
      'mail.confirm',
    ]);
    expect(outbox.listensFor('mail.confirm')).toBe('shop.OrderPlaced');
    expect(outbox.listensFor('nobody')).toBeUndefined();
  });
});
