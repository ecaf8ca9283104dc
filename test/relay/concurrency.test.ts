import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigurationError, defineOutbox, event, type Outbox, receiver } from '../../src/index.js';
import { dialectNamed } from '../../src/storage/dialects.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  createReceivedTable,
  freshPrefix,
  openOutbox,
  receivedIds,
  rowsOf,
  shortSleep,
  tableName,
  waitFor,
} from './support.js';

describeEachDialect('relay: several relays', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Item = event({ schema: z.object({ n: z.number() }) });

  // Every dialect whose capabilities split the queue (SKIP LOCKED, many writers).
  const splits = dialectNamed(dialect.name).capabilities;
  const splitsQueue = splits.skipLocked && !splits.singleWriter;

  if (splitsQueue) {
    it('N relays split the work with SKIP LOCKED: every event is delivered exactly once and every relay does some', async () => {
      const table = await createReceivedTable(db, 'received_split');
      const RELAYS = 4;
      const EVENTS = 240;
      const calls = new Map<string, number>();
      // One config per relay process; each handler writes through its own Sequelize.
      const relays: Outbox[] = [];
      const prefix = freshPrefix();
      for (let i = 0; i < RELAYS; i++) {
        const sequelize = i === 0 ? db.sequelize : db.connectAgain();
        const config = defineOutbox({
          events: { 'inv.Item': Item },
          receivers: {
            'inv.count': receiver(Item, {
              handle: async (e, ctx) => {
                calls.set(e.id, (calls.get(e.id) ?? 0) + 1);
                await sequelize.query(`INSERT INTO ${table} (event_id, label) VALUES ($1, $2)`, {
                  bind: [e.id, `relay-${i}`],
                  transaction: ctx.transaction,
                });
                // A little work, so that no relay can drain the queue alone.
                await new Promise((resolve) => setTimeout(resolve, 1));
              },
            }),
          },
        });
        relays.push(
          await openOutbox(db, config, {
            sequelize,
            schema: db.outboxOptions.schema,
            tablePrefix: prefix,
          }),
        );
      }
      const fired = await relays[0].fireMany(
        Array.from({ length: EVENTS }, (_, n) => ({ name: 'inv.Item', payload: { n } })),
      );

      const stop = new AbortController();
      const running = relays.map((outbox, i) =>
        outbox.runRelay({
          workerId: `relay-${i}`,
          signal: stop.signal,
          batchSize: 5,
          concurrency: 3,
          sleep: shortSleep(5),
        }),
      );
      try {
        await waitFor(
          async () => (await receivedIds(db, table)).length >= EVENTS,
          'every event to be delivered',
          20_000,
        );
      } finally {
        stop.abort();
      }
      const reports = await Promise.all(running);

      expect(await receivedIds(db, table)).toEqual(fired.map((e) => e.id).sort());
      expect([...calls.values()].every((n) => n === 1)).toBe(true);
      expect(calls.size).toBe(EVENTS);
      const rows = await rowsOf(relays[0], 'inv.count');
      expect(rows.every((r) => r.status === 'succeeded' && r.attempts === 1)).toBe(true);
      // Every relay did some of the work, and together exactly all of it.
      const byRelay = reports.map((r) => r.succeeded);
      expect(byRelay.every((n) => n > 0)).toBe(true);
      expect(byRelay.reduce((a, b) => a + b, 0)).toBe(EVENTS);
      const [labels] = (await db.sequelize.query(
        `SELECT label, count(*) AS n FROM ${table} GROUP BY label ORDER BY label`,
      )) as [{ label: string; n: number }[], unknown];
      expect(labels.map((l) => Number(l.n))).toEqual(byRelay);
    });
  }

  if (splitsQueue) {
    it("several relays keep each ordering key's events in sequence order", async () => {
      const table = tableName(db, 'received_keys');
      // seq is drawn when the handler's insert runs, so it orders the deliveries.
      await db.sequelize.query(
        `CREATE TABLE ${table} (seq ${dialectNamed(dialect.name).sql.ddl.columnType('sequence')}, event_id varchar(64) UNIQUE, k varchar(16), n int)`,
      );
      const KEYS = 6;
      const PER_KEY = 12;
      const prefix = freshPrefix();
      const relays: Outbox[] = [];
      for (let i = 0; i < 3; i++) {
        const sequelize = i === 0 ? db.sequelize : db.connectAgain();
        const config = defineOutbox({
          events: { 'inv.Item': Item },
          receivers: {
            'inv.ledger': receiver(Item, {
              handle: async (e, ctx) => {
                await sequelize.query(`INSERT INTO ${table} (event_id, k, n) VALUES ($1, $2, $3)`, {
                  bind: [e.id, e.orderingKey, e.payload.n],
                  transaction: ctx.transaction,
                });
                await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
              },
            }),
          },
        });
        relays.push(
          await openOutbox(db, config, {
            sequelize,
            schema: db.outboxOptions.schema,
            tablePrefix: prefix,
          }),
        );
      }
      // Interleaved keys: n counts up within each key.
      await relays[0].fireMany(
        Array.from({ length: KEYS * PER_KEY }, (_, i) => ({
          name: 'inv.Item' as const,
          payload: { n: Math.floor(i / KEYS) },
          orderingKey: `k${i % KEYS}`,
        })),
      );
      const stop = new AbortController();
      const running = relays.map((outbox, i) =>
        outbox.runRelay({
          workerId: `keyed-${i}`,
          signal: stop.signal,
          batchSize: 4,
          concurrency: 4,
          sleep: shortSleep(2),
        }),
      );
      try {
        await waitFor(async () => {
          const [rows] = (await db.sequelize.query(`SELECT count(*) AS n FROM ${table}`)) as [
            { n: number }[],
            unknown,
          ];
          return Number(rows[0].n) === KEYS * PER_KEY;
        }, 'every keyed event to be delivered');
      } finally {
        stop.abort();
      }
      const reports = await Promise.all(running);
      expect(reports.filter((r) => r.succeeded > 0).length).toBeGreaterThan(1);
      const [rows] = (await db.sequelize.query(`SELECT k, n FROM ${table} ORDER BY seq`)) as [
        { k: string; n: number }[],
        unknown,
      ];
      for (let k = 0; k < KEYS; k++) {
        expect(rows.filter((r) => r.k === `k${k}`).map((r) => Number(r.n))).toEqual(
          Array.from({ length: PER_KEY }, (_, n) => n),
        );
      }
    });
  }

  if (dialect.name === 'sqlite') {
    it('a second concurrent relay is refused on SQLite unless allowUnsafeConcurrency, and may start once the first stops', async () => {
      const seen: number[] = [];
      const config = defineOutbox({
        events: { 'inv.Item': Item },
        receivers: { 'inv.count': receiver(Item, { handle: (e) => void seen.push(e.payload.n) }) },
      });
      const tablePrefix = freshPrefix();
      const first = await openOutbox(db, config, { tablePrefix });
      const second = await openOutbox(db, config, {
        tablePrefix,
        sequelize: db.connectAgain(),
      });
      const stop = new AbortController();
      const running = first.runRelay({
        workerId: 'first',
        signal: stop.signal,
        sleep: shortSleep(),
      });
      try {
        await first.fire('inv.Item', { n: 1 });
        await waitFor(() => seen.length === 1, 'the first relay to deliver');

        const refused = second.runRelay({ workerId: 'second', passes: 1 });
        await expect(refused).rejects.toBeInstanceOf(ConfigurationError);
        await expect(refused).rejects.toThrow(/another relay is running.*allowUnsafeConcurrency/);

        // Lifted for a deployment that knows what it runs.
        const unsafe = await second.runRelay({
          workerId: 'second',
          passes: 1,
          allowUnsafeConcurrency: true,
          sleep: shortSleep(),
        });
        expect(unsafe.passes).toBe(1);
      } finally {
        stop.abort();
        await running;
      }

      await second.fire('inv.Item', { n: 2 });
      const after = await second.runRelay({ workerId: 'second', passes: 1, sleep: shortSleep() });
      expect(after.succeeded).toBe(1);
      expect(seen).toEqual([1, 2]);
    });
  }
});
