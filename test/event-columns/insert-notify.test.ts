/**
 * The event's own columns in the insert of an outbox whose insert also carries the NOTIFY
 * channel (a `listenNotifyWakeup`): on PostgreSQL the channel's parameter comes after the
 * event's and the delivery rows', so with declared columns every later parameter is numbered
 * after the longer list, in each form (one event, a batch, a large batch as JSON arrays).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  createOutbox,
  defineOutbox,
  event,
  listenNotifyWakeup,
  type OutboxEvent,
  receiver,
  silentLogger,
} from '../../src/index.js';
import { postgresTestSchema, postgresUrl, type TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';

const Placed = event({ schema: z.object({ n: z.number() }) });

describe.skipIf(!inject('pgAvailable'))(
  'event columns with NOTIFY in the insert [postgres]',
  () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await postgresTestSchema();
    });
    afterAll(() => db.cleanup());

    it('one event, a batch and a large batch write their columns and queue their NOTIFY', async () => {
      const seen: OutboxEvent[] = [];
      const config = defineOutbox({
        events: { 'shop.Placed': Placed },
        receivers: { 'shop.log': receiver(Placed, { handle: (e) => void seen.push(e) }) },
        eventColumns: { order_id: { type: 'bigint', index: true }, region: { type: 'text' } },
      });
      const channel = `obk_${randomBytes(5).toString('hex')}`;
      const outbox = createOutbox(config, {
        ...db.outboxOptions,
        tablePrefix: `${channel}_`,
        wakeup: listenNotifyWakeup({ channel, logger: silentLogger }),
        logger: silentLogger,
      });
      await outbox.migrate();
      const client = new pg.Client({ connectionString: postgresUrl() });
      const heard: string[] = [];
      await client.connect();
      client.on('notification', (n) => {
        if (n.channel === channel) heard.push(n.payload ?? '');
      });
      await client.query(`LISTEN "${channel}"`);
      try {
        const message = (n: number) => ({
          name: 'shop.Placed' as const,
          payload: { n },
          columns: (n % 2 === 0 ? { order_id: n, region: `r${n}` } : {}) as Record<
            string,
            number | string
          >,
        });
        await outbox.fire('shop.Placed', { n: 0 }, { columns: { order_id: 0, region: 'r0' } });
        await outbox.fireMany([1, 2, 3].map(message));
        await outbox.fireMany(Array.from({ length: 300 }, (_, k) => message(4 + k)));
        for (let i = 0; i < 100 && heard.length < 3; i++)
          await new Promise((resolve) => setTimeout(resolve, 10));
        expect(heard).toEqual(['shop.Placed', 'shop.Placed', 'shop.Placed']);
        await drainOutbox(outbox);
        const byN = [...seen].sort(
          (a, b) => (a.payload as { n: number }).n - (b.payload as { n: number }).n,
        );
        expect(byN.map((e) => e.columns)).toEqual(
          byN.map((_, n) =>
            n % 2 === 0
              ? { order_id: String(n), region: `r${n}` }
              : { order_id: null, region: null },
          ),
        );
      } finally {
        await client.end();
        await outbox.close();
      }
    });
  },
);
