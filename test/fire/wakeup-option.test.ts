import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  createOutbox,
  defineOutbox,
  event,
  listenNotifyWakeup,
  type Outbox,
  receiver,
  silentLogger,
} from '../../src/index.js';
import { postgresTestSchema, postgresUrl, type TestDatabase } from '../../testing/databases.js';
import { fakeTime, T0 } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import { recordingWakeup } from './support.js';

const Placed = event({ schema: z.object({ orderId: z.string() }) });
const Shipped = event({ schema: z.object({ orderId: z.string() }) });
const config = defineOutbox({
  events: { 'shop.OrderPlaced': Placed, 'shop.OrderShipped': Shipped },
  receivers: {
    'mail.placed': receiver(Placed, { handle: () => {} }),
    'mail.shipped': receiver(Shipped, { handle: () => {} }),
  },
});

describeEachDialect('fire(…, { wakeup: false })', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox<typeof config>;
  const wakeup = recordingWakeup();

  beforeAll(async () => {
    db = await dialect.open();
    outbox = createOutbox(config, { ...db.outboxOptions, wakeup, logger: silentLogger });
    await outbox.migrate();
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  it('signals no wakeup for that call, and still owes its receivers', async () => {
    wakeup.signals.length = 0;
    await outbox.fire('shop.OrderPlaced', { orderId: 'bulk-1' }, { wakeup: false });
    await outbox.fireMany(
      [
        { name: 'shop.OrderPlaced', payload: { orderId: 'bulk-2' } },
        { name: 'shop.OrderShipped', payload: { orderId: 'bulk-2' } },
      ],
      { wakeup: false },
    );
    expect(wakeup.signals).toEqual([]);
    expect(await outbox.countDeliveries()).toMatchObject({ pending: 3 });
    await outbox.fire('shop.OrderPlaced', { orderId: 'live' });
    expect(wakeup.signals).toEqual([['shop.OrderPlaced']]);
  });

  it('in one transaction, the calls that want a wakeup still signal their own topics', async () => {
    wakeup.signals.length = 0;
    await db.sequelize.transaction(async (transaction) => {
      await outbox.fire('shop.OrderPlaced', { orderId: 'quiet' }, { transaction, wakeup: false });
      await outbox.fire('shop.OrderShipped', { orderId: 'loud' }, { transaction });
    });
    expect(wakeup.signals).toEqual([['shop.OrderShipped']]);
  });
});

/** A client LISTENing on `channel`, keeping what it hears. */
async function listener(channel: string) {
  const client = new pg.Client({ connectionString: postgresUrl() });
  const heard: string[] = [];
  await client.connect();
  client.on('notification', (n) => {
    if (n.channel === channel) heard.push(n.payload ?? '');
  });
  await client.query(`LISTEN "${channel}"`);
  return { heard, end: () => client.end() };
}

let shared: TestDatabase;

/** Let notifications sent by the server reach the listening client. */
async function settle(heard: string[], count: number): Promise<void> {
  for (let i = 0; i < 60 && heard.length < count; i++)
    await new Promise((resolve) => setTimeout(resolve, 5));
  await new Promise((resolve) => setTimeout(resolve, 30));
}

describe.skipIf(!inject('pgAvailable'))(
  'LISTEN/NOTIFY per call and per interval [postgres]',
  () => {
    beforeAll(async () => {
      shared = await postgresTestSchema();
    });
    afterAll(() => shared.cleanup());

    async function open(
      options: { notifyCoalesceMs?: number },
      time?: ReturnType<typeof fakeTime>,
    ) {
      const channel = `obk_${randomBytes(5).toString('hex')}`;
      const outbox = createOutbox(config, {
        ...shared.outboxOptions,
        tablePrefix: `${channel}_`,
        wakeup: listenNotifyWakeup({ channel, logger: silentLogger, ...options }),
        logger: silentLogger,
        ...(time ? { clock: time.now, scheduler: time.scheduler } : {}),
      });
      await outbox.migrate();
      return { outbox, heard: await listener(channel) };
    }

    it('fire(…, { wakeup: false }) queues no NOTIFY in its write; the next fire does', async () => {
      const { outbox, heard } = await open({});
      await outbox.fire('shop.OrderPlaced', { orderId: 'quiet' }, { wakeup: false });
      await outbox.fireMany(
        [
          { name: 'shop.OrderPlaced', payload: { orderId: 'q1' } },
          { name: 'shop.OrderShipped', payload: { orderId: 'q1' } },
        ],
        { wakeup: false },
      );
      await settle(heard.heard, 1);
      expect(heard.heard).toEqual([]);
      await outbox.fire('shop.OrderShipped', { orderId: 'loud' });
      await settle(heard.heard, 1);
      expect(heard.heard).toEqual(['shop.OrderShipped']);
      expect(await outbox.countDeliveries()).toMatchObject({ pending: 4 });
      await heard.end();
      await outbox.close();
    });

    it('notifyCoalesceMs: at most one NOTIFY per interval, the rest folded into one trailing NOTIFY after it, never lost', async () => {
      const time = fakeTime(T0);
      const { outbox, heard } = await open({ notifyCoalesceMs: 100 }, time);
      // The first write of the interval carries its NOTIFY.
      await outbox.fire('shop.OrderPlaced', { orderId: 'a' });
      await settle(heard.heard, 1);
      expect(heard.heard).toEqual(['shop.OrderPlaced']);
      // Three more inside the interval, in transactions of their own: no NOTIFY yet.
      await time.tick(10);
      await outbox.fire('shop.OrderPlaced', { orderId: 'b' });
      await outbox.fire('shop.OrderShipped', { orderId: 'b' });
      await time.tick(30);
      await outbox.fire('shop.OrderShipped', { orderId: 'c' });
      await settle(heard.heard, 2);
      expect(heard.heard).toEqual(['shop.OrderPlaced']);
      // The interval ends: ONE trailing NOTIFY round names every folded topic.
      await time.tick(60);
      await settle(heard.heard, 3);
      expect(heard.heard.slice(1).sort()).toEqual(['shop.OrderPlaced', 'shop.OrderShipped']);
      // A write well after the interval carries its own NOTIFY again.
      await time.tick(500);
      await outbox.fire('shop.OrderShipped', { orderId: 'd' });
      await settle(heard.heard, 4);
      expect(heard.heard).toHaveLength(4);
      expect(heard.heard[3]).toBe('shop.OrderShipped');
      await heard.end();
      await outbox.close();
    });

    it('a folded write that commits after the trailer went out is announced by the next one', async () => {
      const time = fakeTime(T0);
      const { outbox, heard } = await open({ notifyCoalesceMs: 100 }, time);
      await outbox.fire('shop.OrderPlaced', { orderId: 'first' });
      await time.tick(10);
      // Folded at its write (inside the interval), but committed only after the interval.
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const late = shared.sequelize.transaction(async (transaction) => {
        await outbox.fire('shop.OrderShipped', { orderId: 'late' }, { transaction });
        await held;
      });
      await new Promise((resolve) => setTimeout(resolve, 20));
      await time.tick(200);
      await settle(heard.heard, 2);
      expect(heard.heard).toEqual(['shop.OrderPlaced']); // nothing committed to announce yet
      release();
      await late;
      await time.tick(100);
      await settle(heard.heard, 2);
      expect(heard.heard).toEqual(['shop.OrderPlaced', 'shop.OrderShipped']);
      await heard.end();
      await outbox.close();
    });

    it('a rolled-back folded write announces nothing; close() sends a pending trailer at once', async () => {
      const time = fakeTime(T0);
      const { outbox, heard } = await open({ notifyCoalesceMs: 1_000 }, time);
      await outbox.fire('shop.OrderPlaced', { orderId: 'first' });
      await shared.sequelize
        .transaction(async (transaction) => {
          await outbox.fire('shop.OrderShipped', { orderId: 'gone' }, { transaction });
          throw new Error('rolled back');
        })
        .catch(() => {});
      await time.tick(2_000);
      await settle(heard.heard, 2);
      expect(heard.heard).toEqual(['shop.OrderPlaced']);
      await outbox.fire('shop.OrderShipped', { orderId: 'kept' }); // admitted: a new interval
      await outbox.fire('shop.OrderPlaced', { orderId: 'folded' });
      await outbox.close();
      await settle(heard.heard, 4);
      expect(heard.heard).toEqual(['shop.OrderPlaced', 'shop.OrderShipped', 'shop.OrderPlaced']);
      await heard.end();
    });

    it('refuses a notifyCoalesceMs that is no number ≥ 0', () => {
      expect(() => listenNotifyWakeup({ notifyCoalesceMs: -1 })).toThrow(ConfigurationError);
      expect(() => listenNotifyWakeup({ notifyCoalesceMs: '10' as never })).toThrow(
        /notifyCoalesceMs \}\) must be a number of milliseconds ≥ 0/,
      );
      expect(listenNotifyWakeup({ notifyCoalesceMs: 25 }).capabilities.notifyInWrite).toEqual({
        channel: 'outboxkit',
        coalesceMs: 25,
      });
    });
  },
);
