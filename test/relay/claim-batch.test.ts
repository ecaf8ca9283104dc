import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigurationError, defineOutbox, event, receiver } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import { deliveryRows, openOutbox, rowsOf, T0, testClock } from './support.js';

const Placed = event({ schema: z.object({ orderId: z.string() }) });
const config = defineOutbox({
  events: { 'shop.OrderPlaced': Placed },
  receivers: {
    'mail.confirm': receiver(Placed, { handle: () => {} }),
    'ops.later': receiver(Placed, { handle: () => {}, due: { hours: 1 }, lane: 'slow' }),
  },
  settings: { leaseSeconds: 30 },
});

describeEachDialect('outbox.claimBatch(): the relay claim, for a worker of the app', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('takes ownership of up to limit owed deliveries and returns their ids and the claim, as JSON', async () => {
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    for (const orderId of ['o1', 'o2', 'o3'])
      await outbox.fire('shop.OrderPlaced', { orderId }, { orderingKey: orderId });
    const first = await outbox.claimBatch({ workerId: 'worker-a', limit: 2, lane: 'default' });
    expect(JSON.parse(JSON.stringify(first))).toEqual(first);
    expect(first.claimedBy).toBe('worker-a');
    expect(first.claimedAt).toBe(T0.toISOString());
    expect(first.leaseUntil).toBe(new Date(T0.getTime() + 33_000).toISOString());
    const rows = await rowsOf(outbox, 'mail.confirm');
    expect(first.deliveryIds).toEqual([rows[0].id, rows[1].id]);
    expect(rows.map((r) => [r.status, r.claimedBy])).toEqual([
      ['claimed', 'worker-a'],
      ['claimed', 'worker-a'],
      ['pending', null],
    ]);
    // A second worker takes only what the first does not hold.
    const second = await outbox.claimBatch({ workerId: 'worker-b', limit: 10, lane: 'default' });
    expect(second.deliveryIds).toEqual([rows[2].id]);
    await outbox.close();
  });

  it('claims are leased, not marked: a lapsed claim is claimed again, the same path as a retry', async () => {
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    const dead = await outbox.claimBatch({
      workerId: 'worker-dies',
      limit: 1,
      leaseSeconds: 5,
      lane: 'default',
    });
    expect(dead.leaseUntil).toBe(new Date(T0.getTime() + 5_000).toISOString());
    expect(
      (await outbox.claimBatch({ workerId: 'worker-b', limit: 1, lane: 'default' })).deliveryIds,
    ).toEqual([]);
    clock.advance(6_000);
    const again = await outbox.claimBatch({ workerId: 'worker-b', limit: 1, lane: 'default' });
    expect(again.deliveryIds).toEqual(dead.deliveryIds);
    expect((await rowsOf(outbox, 'mail.confirm'))[0].claimedBy).toBe('worker-b');
    await outbox.close();
  });

  it('ignoring the backoff never ignores the schedule', async () => {
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    const early = await outbox.claimBatch({
      workerId: 'w',
      limit: 10,
      lane: 'slow',
      ignoreBackoff: true,
    });
    expect(early.deliveryIds).toEqual([]);
    const due = await outbox.claimBatch({
      workerId: 'w',
      limit: 10,
      lane: 'slow',
      now: new Date(T0.getTime() + 3_600_000),
    });
    expect(due.deliveryIds).toEqual([(await rowsOf(outbox, 'ops.later'))[0].id]);
    await outbox.close();
  });

  it('onlyIds and excludeIds narrow the claim', async () => {
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    for (const orderId of ['o1', 'o2', 'o3'])
      await outbox.fire('shop.OrderPlaced', { orderId }, { orderingKey: orderId });
    const ids = (await rowsOf(outbox, 'mail.confirm')).map((r) => r.id);
    const only = await outbox.claimBatch({ workerId: 'w', limit: 10, onlyIds: [ids[1]] });
    expect(only.deliveryIds).toEqual([ids[1]]);
    const rest = await outbox.claimBatch({
      workerId: 'w',
      limit: 10,
      lane: 'default',
      excludeIds: [ids[0]],
    });
    expect(rest.deliveryIds).toEqual([ids[2]]);
    await outbox.close();
  });

  it('refuses bad arguments before anything is claimed, naming the option', async () => {
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ limit: 1 }, /claimBatch\(\{ workerId \}\) must be a non-empty string/],
      [{ workerId: '', limit: 1 }, /workerId/],
      [{ workerId: 'x'.repeat(256), limit: 1 }, /at most 255 characters/],
      [{ workerId: 'w' }, /claimBatch\(\{ limit \}\) must be an integer from 1 to 10000/],
      [{ workerId: 'w', limit: 0 }, /limit/],
      [{ workerId: 'w', limit: 10_001 }, /limit/],
      [{ workerId: 'w', limit: 1.5 }, /limit/],
      [
        { workerId: 'w', limit: 1, leaseSeconds: 0 },
        /leaseSeconds \}\) must be a number of seconds/,
      ],
      [{ workerId: 'w', limit: 1, now: new Date('nope') }, /now \}\) must be a valid Date/],
      [{ workerId: 'w', limit: 1, onlyIds: ['1; DROP'] }, /onlyIds/],
      [{ workerId: 'w', limit: 1, lane: 'nowhere' }, /no receiver is declared in lane "nowhere"/],
      [{ workerId: 'w', limit: 1, topics: ['a*b'] }, /topics/],
    ];
    for (const [options, message] of bad) {
      const error = await outbox.claimBatch(options as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, JSON.stringify(options)).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message).toMatch(message);
    }
    expect((await deliveryRows(outbox)).every((r) => r.status === 'pending')).toBe(true);
    await outbox.close();
  });
});

describeEachDialect('deliverPending({ workerId })', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('names the worker on the rows it claims, and refuses an empty one', async () => {
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    await expect(outbox.deliverPending({ workerId: '' })).rejects.toThrow(
      /deliverPending\(\{ workerId \}\) must be a non-empty string/,
    );
    const counts = await outbox.deliverPending({ workerId: 'nightly-cron', lane: 'default' });
    expect(counts.succeeded).toBe(1);
    expect((await rowsOf(outbox, 'mail.confirm'))[0]).toMatchObject({
      status: 'succeeded',
      claimedBy: 'nightly-cron',
    });
    await outbox.close();
  });

  it('refuses limit with batchSize: a limit is one claim of exactly that many rows', async () => {
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    const error = await outbox.deliverPending({ limit: 5, batchSize: 2 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(/takes limit or batchSize, not both/);
    expect((await deliveryRows(outbox)).every((r) => r.status === 'pending')).toBe(true);
    await outbox.close();
  });
});
