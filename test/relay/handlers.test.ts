import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, receiver } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  createReceivedTable,
  openOutbox,
  receivedIds,
  rowsOf,
  shortSleep,
  T0,
  testClock,
} from './support.js';

describeEachDialect('relay: durable handlers', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const OrderPlaced = event({ schema: z.object({ orderId: z.string() }) });

  /** A config whose handler records the event in `table`, then maybe throws. */
  function recordingConfig(table: () => string, fail: (attempt: number) => boolean) {
    return defineOutbox({
      events: { 'shop.OrderPlaced': OrderPlaced },
      receivers: {
        'billing.record': receiver(OrderPlaced, {
          handle: async (e, ctx) => {
            await db.sequelize.query(`INSERT INTO ${table()} (event_id, label) VALUES ($1, $2)`, {
              bind: [e.id, `${e.payload.orderId}#${ctx.attempt}`],
              transaction: ctx.transaction,
            });
            if (fail(ctx.attempt)) throw new Error(`boom on attempt ${ctx.attempt}`);
          },
        }),
      },
      settings: { backoff: { baseSeconds: 10, capSeconds: 1000 } },
    });
  }

  it('a durable handler runs in the relay and its database writes commit with the acknowledgement', async () => {
    const table = await createReceivedTable(db, 'received_ok');
    const clock = testClock();
    const outbox = await openOutbox(
      db,
      recordingConfig(
        () => table,
        () => false,
      ),
      { clock: clock.now },
    );
    const fired = await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    expect(await receivedIds(db, table)).toEqual([]);

    const report = await outbox.runRelay({ passes: 1, sleep: shortSleep() });

    expect(report.succeeded).toBe(1);
    expect(await receivedIds(db, table)).toEqual([fired.id]);
    const [row] = await rowsOf(outbox, 'billing.record');
    expect(row).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      lastError: null,
      completedAt: T0,
      succeededAt: T0,
      leaseUntil: null,
    });
  });

  it("a throwing handler's writes roll back and the row is failed with attempts 1, last_error and available_at = now + backoff", async () => {
    const table = await createReceivedTable(db, 'received_fail');
    const clock = testClock();
    const outbox = await openOutbox(
      db,
      recordingConfig(
        () => table,
        () => true,
      ),
      { clock: clock.now, jitter: () => 0.5 },
    );
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });

    const report = await outbox.runRelay({ passes: 1, sleep: shortSleep() });

    expect(report.failed).toBe(1);
    expect(await receivedIds(db, table)).toEqual([]);
    const [row] = await rowsOf(outbox, 'billing.record');
    // First retry: ceiling = base 10 s, full jitter 0.5 → 5 s after the attempt.
    expect(row).toMatchObject({
      status: 'failed',
      attempts: 1,
      lastError: 'Error: boom on attempt 1',
      availableAt: new Date(T0.getTime() + 5_000),
      completedAt: null,
      leaseUntil: null,
    });
  });

  it('a failed delivery is retried once its backoff has run out, and not before', async () => {
    const table = await createReceivedTable(db, 'received_retry');
    const clock = testClock();
    const outbox = await openOutbox(
      db,
      recordingConfig(
        () => table,
        (attempt) => attempt === 1,
      ),
      { clock: clock.now },
    );
    const fired = await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });

    clock.advance(4_999);
    const early = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(early.succeeded + early.failed).toBe(0);
    expect((await rowsOf(outbox, 'billing.record'))[0]).toMatchObject({
      status: 'failed',
      attempts: 1,
    });

    clock.advance(1);
    const due = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(due.succeeded).toBe(1);
    const [row] = await rowsOf(outbox, 'billing.record');
    expect(row).toMatchObject({ status: 'succeeded', attempts: 2 });
    // Only the second attempt's write survived; the first was rolled back with its failure.
    const [labels] = (await db.sequelize.query(`SELECT event_id, label FROM ${table}`)) as [
      { event_id: string; label: string }[],
      unknown,
    ];
    expect(labels).toEqual([{ event_id: fired.id, label: 'o1#2' }]);
  });

  it(`handlers run up to the relay's concurrency at a time${dialect.name === 'sqlite' ? ' (one at a time on SQLite, which has one writer)' : ''}`, async () => {
    let inFlight = 0;
    let most = 0;
    const config = defineOutbox({
      events: { 'shop.OrderPlaced': OrderPlaced },
      receivers: {
        'billing.record': receiver(OrderPlaced, {
          handle: async () => {
            inFlight += 1;
            most = Math.max(most, inFlight);
            await new Promise((resolve) => setTimeout(resolve, 20));
            inFlight -= 1;
          },
        }),
      },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    for (let i = 0; i < 9; i++) await outbox.fire('shop.OrderPlaced', { orderId: `o${i}` });
    const report = await outbox.runRelay({ passes: 1, concurrency: 3, sleep: shortSleep() });
    expect(report.succeeded).toBe(9);
    expect(most).toBe(dialect.name === 'sqlite' ? 1 : 3);
  });

  it('a handler receives the decoded event and its delivery context', async () => {
    const seen: unknown[] = [];
    const Shipped = event({
      schema: z.object({ orderId: z.string(), at: z.coerce.date(), total: z.number() }),
    });
    const config = defineOutbox({
      events: { 'shop.Shipped': Shipped },
      receivers: {
        'mail.shipped': receiver(Shipped, {
          handle: (e, ctx) => {
            seen.push({
              payload: e.payload,
              atIsDate: e.payload.at instanceof Date,
              headers: e.headers,
              orderingKey: e.orderingKey,
              receiverKey: ctx.receiverKey,
              attempt: ctx.attempt,
              hasTransaction: ctx.transaction !== undefined,
            });
          },
        }),
      },
    });
    const outbox = await openOutbox(db, config);
    const at = new Date('2031-01-02T03:04:05.678Z');
    await outbox.fire(
      'shop.Shipped',
      { orderId: 'o9', at, total: 12.5 },
      { headers: { trace: 'abc' }, orderingKey: 'order-o9' },
    );
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(seen).toEqual([
      {
        payload: { orderId: 'o9', at, total: 12.5 },
        atIsDate: true,
        headers: { trace: 'abc' },
        orderingKey: 'order-o9',
        receiverKey: 'mail.shipped',
        attempt: 1,
        hasTransaction: true,
      },
    ]);
  });
});
