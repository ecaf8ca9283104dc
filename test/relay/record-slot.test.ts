import { type Sequelize, Transaction } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type DeliveryItem,
  type DeliveryResult,
  defineOutbox,
  event,
  type OutboxDelivery,
  receiver,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import {
  describeSplittingDialects,
  freshPrefix,
  gate,
  openOutbox,
  rowsOf,
  tableName,
  waitFor,
} from './support.js';

/**
 * A batch whose attempts all ended only waits for its record: the relay claims its next
 * batch meanwhile (a third in hand beside two running attempts), so a transport's send is
 * not followed by its record before the next claim may start. Each test holds one batch's
 * record on a row lock taken from another connection (a record blocked in the database,
 * as a slow one is), so the third batch is in hand for certain, and asserts what was
 * delivered and recorded.
 */
describeSplittingDialects(
  'relay: a batch waiting for its record holds no attempt slot',
  (dialect) => {
    let db: TestDatabase;
    let other: Sequelize;
    beforeAll(async () => {
      db = await dialect.open();
      other = db.connectAgain();
    });
    afterAll(async () => {
      await other?.close();
      await db.cleanup();
    });

    const Step = event({ schema: z.object({ label: z.string() }) });

    /** A transport whose calls `behave` decides, each call's labels logged as it starts. */
    function setup(
      behave: (call: number, items: readonly DeliveryItem[]) => Promise<readonly DeliveryResult[]>,
    ) {
      const calls: string[][] = [];
      const deliver: OutboxDelivery = {
        deliverBatch: (items) => {
          calls.push(items.map((i) => (i.event.payload as { label: string }).label));
          return behave(calls.length, items);
        },
      };
      const config = defineOutbox({
        events: { 'acct.Step': Step },
        receivers: { sink: receiver(Step, { deliver }) },
      });
      return { config, calls };
    }

    /** Lock these delivery rows from another connection until `release()`. */
    async function lockRows(prefix: string, items: readonly DeliveryItem[]) {
      const ids = items.map((i) => Number(i.context.deliveryId));
      // READ COMMITTED: InnoDB then keeps no lock on a row the statement read and passed over.
      const t: Transaction = await other.transaction({
        isolationLevel: Transaction.ISOLATION_LEVELS.READ_COMMITTED,
      });
      // One row at a time, by primary key: InnoDB then locks exactly that row.
      for (const id of ids)
        await other.query(
          `SELECT id FROM ${tableName(db, `${prefix}deliveries`)} WHERE id = ? FOR UPDATE`,
          { replacements: [id], transaction: t },
        );
      return { release: () => t.commit() };
    }

    const SENT: DeliveryResult = { status: 'sent' };
    const sent = (items: readonly DeliveryItem[]): readonly DeliveryResult[] =>
      items.map(() => SENT);

    it("claims and sends a third batch while the first one's record is held, and a key's events stay in order", async () => {
      const prefix = freshPrefix();
      const second = gate();
      let held: { release: () => Promise<void> } | undefined;
      const { config, calls } = setup(async (call, items) => {
        if (call === 1) held = await lockRows(prefix, items); // its record will wait
        if (call === 2) await second.promise; // its attempts keep running
        return sent(items);
      });
      const outbox = await openOutbox(db, config, { tablePrefix: prefix });
      for (const [label, key] of [
        ['a1', 'A'],
        ['b1', 'B'],
        ['c1', 'C'],
        ['d1', 'D'],
        ['e1', 'E'],
        ['f1', 'F'],
        ['a2', 'A'],
        ['b2', 'B'],
      ])
        await outbox.fire('acct.Step', { label }, { orderingKey: key });
      const stop = new AbortController();
      const relay = outbox.runRelay({ signal: stop.signal, batchSize: 2, pollIntervalMs: 60_000 });
      try {
        // Batch 1 waits for its record, batch 2 is still sending: batch 3 is claimed and sent.
        await waitFor(() => calls.length >= 3, 'a third batch sent');
        expect(calls).toEqual([
          ['a1', 'b1'],
          ['c1', 'd1'],
          ['e1', 'f1'],
        ]);
        // a2 and b2 wait for a1 and b1's record: no claim hands out a key with a row in flight.
        const rows = await rowsOf(outbox, 'sink'); // in event order
        expect(rows.map((r) => r.status).slice(0, 4)).toEqual(Array(4).fill('claimed'));
        expect(rows.map((r) => r.status).slice(6)).toEqual(['pending', 'pending']);
        await held!.release();
        second.open();
        await waitFor(() => calls.length >= 4, 'the held keys sent');
        await waitFor(
          async () => (await outbox.countDeliveries()).succeeded === 8,
          'every row recorded',
        );
      } finally {
        second.open();
        await held?.release().catch(() => {});
        stop.abort();
        await relay;
      }
      expect(calls[3]).toEqual(['a2', 'b2']);
      await outbox.close();
    });

    it("one batch's failure in hand beside two others leaves their verdicts alone", async () => {
      const prefix = freshPrefix();
      const second = gate();
      let held: { release: () => Promise<void> } | undefined;
      const { config, calls } = setup(async (call, items) => {
        if (call === 1) held = await lockRows(prefix, items);
        if (call === 2) {
          await second.promise;
          throw new Error('broker down for batch 2');
        }
        // Batch 3's own results: the first item refused, the second sent.
        if (call === 3) return [{ status: 'failed', error: new Error('refused r1') }, SENT];
        return sent(items);
      });
      const outbox = await openOutbox(db, config, { tablePrefix: prefix });
      // Two more rows, whose fate the test leaves open: with six rows in the table,
      // MariaDB's third claim waited on the row lock this test holds (not looked into).
      for (const label of ['p1', 'p2', 'q1', 'q2', 'r1', 'r2', 'x1', 'x2'])
        await outbox.fire('acct.Step', { label });
      const stop = new AbortController();
      const relay = outbox.runRelay({ signal: stop.signal, batchSize: 2, pollIntervalMs: 60_000 });
      try {
        await waitFor(() => calls.length >= 3, 'a third batch sent');
        // Batch 2 fails while batch 1 waits for its record and batch 3 records its own.
        second.open();
        await waitFor(
          async () =>
            (await rowsOf(outbox, 'sink')).filter((r) => r.status !== 'claimed').length >= 4,
          'batches 2 and 3 recorded',
        );
        await held!.release();
        await waitFor(
          async () => (await rowsOf(outbox, 'sink')).every((r) => r.status !== 'claimed'),
          'batch 1 recorded',
        );
      } finally {
        second.open();
        await held?.release().catch(() => {});
        stop.abort();
        await relay;
      }
      const labels = ['p1', 'p2', 'q1', 'q2', 'r1', 'r2'];
      const rows = await rowsOf(outbox, 'sink'); // in event order: the labels' order
      const verdicts = Object.fromEntries(
        rows.slice(0, 6).map((r, i) => [labels[i], { status: r.status, attempts: r.attempts }]),
      );
      expect(verdicts).toEqual({
        p1: { status: 'succeeded', attempts: 1 },
        p2: { status: 'succeeded', attempts: 1 },
        q1: { status: 'failed', attempts: 1 },
        q2: { status: 'failed', attempts: 1 },
        r1: { status: 'failed', attempts: 1 },
        r2: { status: 'succeeded', attempts: 1 },
      });
      const errors = Object.fromEntries(rows.map((r, i) => [labels[i], r.lastError]));
      expect(errors.r1).toContain('refused r1');
      expect(errors.q1).toContain('broker down for batch 2');
      expect(errors.q2).toContain('broker down for batch 2');
      await outbox.close();
    });

    it('a stop waits for every batch in hand, the one waiting for its record too, and records them all', async () => {
      const prefix = freshPrefix();
      const sends = gate();
      let held: { release: () => Promise<void> } | undefined;
      const { config, calls } = setup(async (call, items) => {
        if (call === 1) held = await lockRows(prefix, items);
        else await sends.promise; // batches 2 and 3 keep sending until released
        return sent(items);
      });
      const outbox = await openOutbox(db, config, { tablePrefix: prefix });
      for (const label of ['s1', 's2', 't1', 't2', 'u1', 'u2', 'v1', 'v2'])
        await outbox.fire('acct.Step', { label });
      const stop = new AbortController();
      let stopped = false;
      const relay = outbox
        .runRelay({ signal: stop.signal, batchSize: 2, pollIntervalMs: 60_000 })
        .finally(() => {
          stopped = true;
        });
      try {
        await waitFor(() => calls.length >= 3, 'three batches in hand');
        stop.abort();
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(stopped).toBe(false);
        sends.open();
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(stopped).toBe(false); // batch 1's record is still held
        await held!.release();
        const report = await relay;
        expect(report.succeeded).toBe(6);
      } finally {
        sends.open();
        await held?.release().catch(() => {});
        stop.abort();
        await relay;
      }
      expect(calls).toHaveLength(3);
      const labels = ['s1', 's2', 't1', 't2', 'u1', 'u2', 'v1', 'v2'];
      const rows = await rowsOf(outbox, 'sink'); // in event order: the labels' order
      const status = Object.fromEntries(
        rows.map((r, i) => [labels[i], `${r.status}/${r.attempts}`]),
      );
      expect(status).toEqual({
        s1: 'succeeded/1',
        s2: 'succeeded/1',
        t1: 'succeeded/1',
        t2: 'succeeded/1',
        u1: 'succeeded/1',
        u2: 'succeeded/1',
        v1: 'pending/0',
        v2: 'pending/0',
      });
      await outbox.close();
    });
  },
);
