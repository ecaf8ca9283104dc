import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type DeliveryContext,
  DeliveryTimeout,
  defineOutbox,
  event,
  type OutboxEvent,
  receiver,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  capturingStatements,
  createReceivedTable,
  gate,
  openOutbox,
  receivedIds,
  rowsOf,
  shortSleep,
  T0,
  testClock,
} from './support.js';

describeEachDialect('relay: transports', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Note = event({ schema: z.object({ n: z.number() }) });
  const n = (e: OutboxEvent) => (e.payload as { n: number }).n;

  it('a deliverBatch transport gets the batch in one call and its per-event results are recorded in one statement', async () => {
    const calls: number[][] = [];
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.kafka': receiver(Note, {
          deliver: {
            name: 'fake-broker',
            deliverBatch: async (items) => {
              calls.push(items.map((i) => n(i.event)));
              return items.map(({ event: e }) =>
                n(e) === 2
                  ? { status: 'failed', error: new Error('partition offline') }
                  : n(e) === 4
                    ? { status: 'failed', error: 'broker said no' }
                    : { status: 'sent' },
              );
            },
          },
        }),
      },
      settings: { backoff: { baseSeconds: 10, capSeconds: 10 } },
    });
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    for (let i = 1; i <= 4; i++) await outbox.fire('bus.Note', { n: i });

    const statements = await capturingStatements(db.sequelize, () =>
      outbox.runRelay({ passes: 1, sleep: shortSleep() }),
    );

    expect(calls).toEqual([[1, 2, 3, 4]]);
    expect(
      (await rowsOf(outbox, 'bus.kafka')).map((r) => [r.status, r.attempts, r.lastError]),
    ).toEqual([
      ['succeeded', 1, null],
      ['failed', 1, 'Error: partition offline'],
      ['succeeded', 1, null],
      ['failed', 1, 'broker said no'],
    ]);
    const failed = (await rowsOf(outbox, 'bus.kafka')).filter((r) => r.status === 'failed');
    expect(failed.map((r) => r.availableAt)).toEqual([
      new Date(T0.getTime() + 5_000),
      new Date(T0.getTime() + 5_000),
    ]);
    // The claim is one UPDATE, and all four outcomes are one more.
    const updates = statements.filter((s) => /UPDATE\s+\S*deliveries/i.test(s));
    expect(updates).toHaveLength(2);
  });

  it('a deliverBatch that throws fails every event of the batch, and one that resolves to nothing delivers them all', async () => {
    let throwing = true;
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.kafka': receiver(Note, {
          deliver: {
            deliverBatch: async () => {
              if (throwing) throw new Error('not connected');
              return undefined;
            },
          },
        }),
      },
    });
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    for (let i = 1; i <= 3; i++) await outbox.fire('bus.Note', { n: i });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect((await rowsOf(outbox, 'bus.kafka')).map((r) => [r.status, r.lastError])).toEqual([
      ['failed', 'Error: not connected'],
      ['failed', 'Error: not connected'],
      ['failed', 'Error: not connected'],
    ]);
    throwing = false;
    clock.advance(3_600_000);
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect((await rowsOf(outbox, 'bus.kafka')).map((r) => [r.status, r.attempts])).toEqual([
      ['succeeded', 2],
      ['succeeded', 2],
      ['succeeded', 2],
    ]);
  });

  it('a plain async function is a transport', async () => {
    const sent: string[] = [];
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.forward': receiver('bus.Note', {
          deliver: async (e: OutboxEvent) => void sent.push(`${e.name}:${n(e)}`),
        }),
      },
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('bus.Note', { n: 7 });
    const report = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(report.succeeded).toBe(1);
    expect(sent).toEqual(['bus.Note:7']);
    expect((await rowsOf(outbox, 'bus.forward'))[0]).toMatchObject({
      status: 'succeeded',
      attempts: 1,
    });
  });

  it('a plain function that is not async is a transport too: what it returns is sent, what it throws fails the attempt', async () => {
    const sent: number[] = [];
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.sync': receiver('bus.Note', {
          // Declared as a plain function (no promise): the relay must not need one.
          deliver: ((e: OutboxEvent) => {
            if (n(e) === 2) throw new Error('refused at once');
            sent.push(n(e));
          }) as unknown as (e: OutboxEvent) => Promise<void>,
        }),
      },
      settings: { backoff: { baseSeconds: 10, capSeconds: 10 } },
    });
    const outbox = await openOutbox(db, config);
    for (const i of [1, 2, 3]) await outbox.fire('bus.Note', { n: i });
    const report = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(report).toMatchObject({ succeeded: 2, failed: 1 });
    expect(sent).toEqual([1, 3]);
    expect(
      (await rowsOf(outbox, 'bus.sync')).map((r) => [r.status, r.attempts, r.lastError]),
    ).toEqual([
      ['succeeded', 1, null],
      ['failed', 1, 'Error: refused at once'],
      ['succeeded', 1, null],
    ]);
  });

  it('an OutboxDelivery with deliver() sends outside any transaction and is given the delivery context', async () => {
    const contexts: DeliveryContext[] = [];
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.webhook': receiver(Note, {
          deliver: {
            deliver: async (_e, ctx) => void contexts.push(ctx),
          },
        }),
      },
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('bus.Note', { n: 1 });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    const [row] = await rowsOf(outbox, 'bus.webhook');
    expect(contexts).toHaveLength(1);
    expect(contexts[0]).toMatchObject({
      receiverKey: 'bus.webhook',
      deliveryId: row.id,
      attempt: 1,
      target: '',
    });
    expect(contexts[0].transaction).toBeUndefined();
  });

  it('a transport that takes longer than its timeout has the attempt counted as a failure', async () => {
    const hang = gate();
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.slow': receiver(Note, {
          deliver: async () => {
            await hang.promise;
          },
          timeoutSeconds: 0.05,
        }),
      },
      settings: { backoff: { baseSeconds: 8, capSeconds: 8 } },
    });
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await outbox.fire('bus.Note', { n: 1 });
    try {
      await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    } finally {
      hang.open();
    }
    expect((await rowsOf(outbox, 'bus.slow'))[0]).toMatchObject({
      status: 'failed',
      attempts: 1,
      lastError: 'DeliveryTimeout: receiver bus.slow timed out after 0.05s',
      availableAt: new Date(T0.getTime() + 4_000),
    });
  });

  it("a hung send's limit frees its worker: the batch's other rows go while the call still hangs, and its late return records nothing more", async () => {
    const hang = gate();
    const sent: number[] = [];
    let lateReturns = 0;
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.mixed': receiver(Note, {
          deliver: async (e) => {
            if (n(e) === 1) {
              await hang.promise;
              lateReturns++;
              return;
            }
            sent.push(n(e));
          },
          timeoutSeconds: 0.05,
        }),
      },
      settings: { backoff: { baseSeconds: 8, capSeconds: 8 } },
    });
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    for (const n of [1, 2, 3]) await outbox.fire('bus.Note', { n });
    let report: Awaited<ReturnType<typeof outbox.runRelay>>;
    try {
      // One worker: the rows after the hung one can only go once its limit frees the place.
      report = await outbox.runRelay({ passes: 1, concurrency: 1, sleep: shortSleep() });
      expect(lateReturns).toBe(0);
    } finally {
      hang.open();
    }
    await new Promise((r) => setTimeout(r, 20));
    expect(lateReturns).toBe(1);
    expect(sent).toEqual([2, 3]);
    expect(report.succeeded).toBe(2);
    expect(report.failed).toBe(1);
    const rows = await rowsOf(outbox, 'bus.mixed');
    expect(rows.map((r) => [r.status, r.attempts])).toEqual([
      ['failed', 1],
      ['succeeded', 1],
      ['succeeded', 1],
    ]);
    expect(rows[0].lastError).toBe('DeliveryTimeout: receiver bus.mixed timed out after 0.05s');
  });

  it('a handler that takes longer than its timeout fails the attempt and its writes roll back', async () => {
    const table = await createReceivedTable(db, 'received_timeout');
    const hang = gate();
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.slowHandler': receiver(Note, {
          handle: async (e, ctx) => {
            await db.sequelize.query(`INSERT INTO ${table} (event_id) VALUES ($1)`, {
              bind: [e.id],
              transaction: ctx.transaction,
            });
            await hang.promise;
          },
          timeoutSeconds: 0.05,
        }),
      },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('bus.Note', { n: 1 });
    try {
      await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    } finally {
      hang.open();
    }
    expect((await rowsOf(outbox, 'bus.slowHandler'))[0]).toMatchObject({
      status: 'failed',
      attempts: 1,
      lastError: 'DeliveryTimeout: receiver bus.slowHandler timed out after 0.05s',
    });
    expect(await receivedIds(db, table)).toEqual([]);
  });

  it("a timed-out send's signal is aborted with a DeliveryTimeout, so the client cancels the send rather than only losing the race", async () => {
    const reasons: unknown[] = [];
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.slow': receiver(Note, {
          deliver: {
            deliverBatch: (_items, { signal }) =>
              new Promise((_, reject) => {
                signal.addEventListener('abort', () => {
                  reasons.push(signal.reason);
                  reject(signal.reason);
                });
              }),
          },
          timeoutSeconds: 0.05,
        }),
      },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('bus.Note', { n: 1 });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(DeliveryTimeout);
    expect(reasons[0]).toMatchObject({
      code: 'OUTBOX_DELIVERY_TIMEOUT',
      retriable: true,
      receiverKey: 'bus.slow',
      timeoutSeconds: 0.05,
    });
    expect((await rowsOf(outbox, 'bus.slow'))[0]).toMatchObject({
      status: 'failed',
      lastError: 'DeliveryTimeout: receiver bus.slow timed out after 0.05s',
    });
  });

  it("a timed-out handler's signal fires, so it stops querying its rolled-back transaction", async () => {
    const table = await createReceivedTable(db, 'received_abort');
    let queriesAfterAbort = 0;
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.slowHandler': receiver(Note, {
          handle: async (e, ctx) => {
            await new Promise<void>((resolve) =>
              ctx.signal!.addEventListener('abort', () => resolve()),
            );
            // A careful handler checks its signal before each query.
            if (ctx.signal!.aborted) return;
            queriesAfterAbort += 1;
            await db.sequelize.query(`INSERT INTO ${table} (event_id) VALUES ($1)`, {
              bind: [e.id],
              transaction: ctx.transaction,
            });
          },
          timeoutSeconds: 0.05,
        }),
      },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('bus.Note', { n: 1 });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(queriesAfterAbort).toBe(0);
    expect((await rowsOf(outbox, 'bus.slowHandler'))[0]).toMatchObject({
      status: 'failed',
      lastError: 'DeliveryTimeout: receiver bus.slowHandler timed out after 0.05s',
    });
    expect(await receivedIds(db, table)).toEqual([]);
  });

  it('deliverBatch gets each event with its delivery context, one signal for the call, and may answer retryAfter', async () => {
    const seen: { context: DeliveryContext; signal: AbortSignal }[] = [];
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.limited': receiver(Note, {
          deliver: {
            deliverBatch: async (items, { signal }) => {
              for (const item of items) seen.push({ context: item.context, signal });
              return items.map((item) =>
                n(item.event) === 1
                  ? { status: 'sent' }
                  : { status: 'retryAfter', seconds: 120, error: 'HTTP 429' },
              );
            },
          },
        }),
      },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('bus.Note', { n: 1 });
    await outbox.fire('bus.Note', { n: 2 });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    const rows = await rowsOf(outbox, 'bus.limited');
    expect(seen.map((s) => s.context)).toEqual([
      expect.objectContaining({
        receiverKey: 'bus.limited',
        deliveryId: rows[0].id,
        attempt: 1,
        target: '',
        dueAt: T0, // an immediate row became due when its event was recorded
      }),
      expect.objectContaining({ deliveryId: rows[1].id, attempt: 1 }),
    ]);
    expect(seen[0].signal).toBe(seen[1].signal);
    expect(seen[0].signal.aborted).toBe(false);
    expect(rows.map((r) => [r.status, r.attempts, r.lastError, r.availableAt])).toEqual([
      ['succeeded', 1, null, expect.any(Date)],
      ['failed', 1, 'RetryAfter: HTTP 429', new Date(T0.getTime() + 120_000)],
    ]);
  });

  it('a deliverBatch that answers the wrong number of results fails every item, saying so', async () => {
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.short': receiver(Note, {
          deliver: { deliverBatch: async () => [{ status: 'sent' }] },
        }),
      },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('bus.Note', { n: 1 });
    await outbox.fire('bus.Note', { n: 2 });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    const rows = await rowsOf(outbox, 'bus.short');
    expect(rows.map((r) => r.status)).toEqual(['failed', 'failed']);
    expect(rows[0].lastError).toBe(
      'TypeError: bus.short: deliverBatch resolved to 1 results for 2 items; it must resolve to one per item (or to nothing when all went)',
    );
  });

  it('a row whose receiver key is no longer declared is recorded orphaned', async () => {
    const kept: number[] = [];
    const before = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.kept': receiver(Note, { handle: () => {} }),
        'bus.removed': receiver(Note, { handle: () => {} }),
        'bus.madeInline': receiver(Note, { handle: () => {} }),
      },
    });
    const after = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.kept': receiver(Note, { handle: (e) => void kept.push(e.payload.n) }),
        'bus.madeInline': receiver(Note, { handle: () => {}, mode: 'inline' }),
      },
    });
    const tablePrefix = `orph_${dialect.name}_`;
    const old = await openOutbox(db, before, { tablePrefix });
    await old.fire('bus.Note', { n: 1 });
    const clock = testClock();
    const outbox = await openOutbox(db, after, { tablePrefix, clock: clock.now });
    const report = await outbox.runRelay({ passes: 1, sleep: shortSleep() });

    expect(report).toMatchObject({ succeeded: 1, orphaned: 2 });
    expect(kept).toEqual([1]);
    const rows = await rowsOf(outbox, 'bus.removed');
    expect(rows[0]).toMatchObject({ status: 'orphaned', attempts: 0, completedAt: T0 });
    expect(rows[0].lastError).toContain('bus.removed');
    expect((await rowsOf(outbox, 'bus.madeInline'))[0].status).toBe('orphaned');
    // An orphan is settled: later relays leave it alone.
    const again = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(again.orphaned).toBe(0);
  });
});
