import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { QueryTypes, type Transaction } from 'sequelize';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { JSON_INSERT_FROM } from '../../src/storage/postgres/statements.js';
import { PostgresStore } from '../../src/storage/postgres.js';
import type { EventRowInput } from '../../src/storage/store.js';
import { type TableNames, tableNames } from '../../src/storage/tables.js';
import { postgresTestSchema, postgresUrl, type TestDatabase } from '../../testing/databases.js';

/**
 * PostgreSQL's insert has two forms: below JSON_INSERT_FROM events each column is bound
 * as a PostgreSQL array, from it as a JSON array (cheaper to send for a large batch). The
 * forms must write the same rows, draw sequences in the same order and queue the same
 * NOTIFY: the same inputs are written once as one batch of JSON_INSERT_FROM events (the
 * JSON form) and once as batches of JSON_INSERT_FROM - 1 and 1 (the arrays form), into
 * two sets of tables, and every stored column is compared as PostgreSQL prints it. A third
 * form, for one event with one delivery row (fire()'s common case), binds scalars; it is
 * compared with the arrays form the same way, below.
 */
describe.skipIf(!inject('pgAvailable'))(
  'the insert’s two forms write the same rows [postgres]',
  () => {
    const CHANNEL = 'outboxkit_insert_forms';
    let db: TestDatabase;
    let jsonTables: TableNames;
    let arrayTables: TableNames;
    let viaJson: PostgresStore;
    let viaArrays: PostgresStore;

    beforeAll(async () => {
      db = await postgresTestSchema();
      jsonTables = tableNames('json_', db.outboxOptions.schema);
      arrayTables = tableNames('arrays_', db.outboxOptions.schema);
      viaJson = new PostgresStore(db.sequelize, jsonTables, CHANNEL);
      viaArrays = new PostgresStore(db.sequelize, arrayTables, CHANNEL);
      await viaJson.migrate();
      await viaArrays.migrate();
    });
    afterAll(() => db.cleanup());

    const T0 = Date.UTC(2030, 0, 1, 12, 30, 45, 123);
    /** The n-th input: every column varied, awkward values among them. */
    const input = (n: number): EventRowInput => {
      const at = new Date(T0 + n * 1_001);
      const odd = n % 2 === 1;
      return {
        uuid: randomUUID(),
        name: ['order.Placed', 'order.Shipped', 'ünïcödé.事件'][n % 3] as string,
        version: 1 + (n % 4),
        payload: JSON.stringify(
          n % 5 === 0
            ? {
                n,
                text: 'emoji 😀, CJK 漢字, RTL עברית, combining é, quote " backslash \\ tab \t nl \n',
                nested: {
                  a: [1, 2.5, -3e-7, null, true, { deep: { deeper: ['x', { y: null }] } }],
                },
                big: 2 ** 60,
              }
            : n % 5 === 1
              ? { n, long: `${'lorem ipsum '.repeat(20_000)}${n}` }
              : n % 5 === 2
                ? [n, 'an array payload', { k: 'v' }]
                : n % 5 === 3
                  ? null
                  : `just a string ${n} with \u2028 line separator`,
        ),
        headers:
          n % 3 === 0
            ? 'null'
            : n % 3 === 1
              ? '{}'
              : JSON.stringify({ traceparent: `00-${n}-01`, 'x-ünïcode': '✓', nested: { n } }),
        orderingKey: n % 4 === 0 ? null : `key-${n % 7}-ключ`,
        idempotencyKey: n % 6 === 0 ? `idem-${n}-🔑` : null,
        occurredAt: new Date(T0 - n * 3_600_000 - (n % 1000)),
        recordedAt: at,
        retentionSeconds: odd ? 86_400 * n : null,
        deleteWhen: odd ? 'delivered' : null,
        actor: n % 3 === 2 ? `user:${n}` : null,
        correlationId: odd ? randomUUID() : null,
        causedBy: n % 8 === 0 ? String(9_007_199_254_740_993n + BigInt(n)) : null,
        suppressedReason: n % 9 === 0 ? 'suppressed: "why" — ü' : null,
        deliveries:
          n % 9 === 0
            ? []
            : Array.from({ length: 1 + (n % 3) }, (_, i) => ({
                receiverKey: `r.${i}-ü`,
                target: i === 0 ? '' : `endpoint-${i}`,
                maxAttempts: 1 + i + (n % 10),
                availableAt: new Date(at.getTime() + i),
                dueAt: i === 1 ? new Date(at.getTime() + 60_000 + i) : null,
              })),
      };
    };

    /** Every stored column of both tables, as PostgreSQL prints it (jsonb, timestamptz, bigint). */
    const stored = async (t: TableNames) => {
      const events = await db.sequelize.query<Record<string, string | null>>(
        `SELECT id::text, uuid::text, name, version::text, payload::text, headers::text,
              ordering_key, idempotency_key, to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS occurred_at,
              to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS recorded_at,
              retention_seconds::text, delete_when, actor, correlation_id, caused_by::text,
              suppressed_reason, payload IS NULL AS payload_sql_null, headers IS NULL AS headers_sql_null,
              jsonb_typeof(headers) AS headers_type
       FROM ${t.events} ORDER BY id`,
        { type: QueryTypes.SELECT },
      );
      const deliveries = await db.sequelize.query<Record<string, string | null>>(
        `SELECT d.id::text, e.uuid::text AS event_uuid, d.event_id::text, d.receiver_key, d.target,
              d.status, d.attempts::text, d.max_attempts::text, d.ordering_key,
              to_char(d.available_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS available_at,
              to_char(d.due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS due_at
       FROM ${t.deliveries} d JOIN ${t.events} e ON e.id = d.event_id ORDER BY d.id`,
        { type: QueryTypes.SELECT },
      );
      return { events, deliveries };
    };

    const inTransaction = <T>(work: (tx: Transaction) => Promise<T>) =>
      db.sequelize.transaction(work);

    /**
     * The payloads of the NOTIFYs heard on CHANNEL while `work` runs, waiting up to 2 s
     * after it for `expected` of them.
     */
    const heardDuring = async (expected: number, work: () => Promise<unknown>) => {
      const listener = new pg.Client({ connectionString: postgresUrl() });
      await listener.connect();
      try {
        const heard: string[] = [];
        listener.on('notification', (m) => heard.push(m.payload ?? ''));
        await listener.query(`LISTEN ${CHANNEL}`);
        await work();
        for (let i = 0; i < 200 && heard.length < expected; i++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        return heard;
      } finally {
        await listener.end();
      }
    };

    it('writes identical rows and sequences either way, just below and at the threshold', async () => {
      expect(JSON_INSERT_FROM).toBeGreaterThan(1);
      const inputs = Array.from({ length: JSON_INSERT_FROM }, (_, n) => input(n));
      const json = await inTransaction((tx) => viaJson.insertEvents(inputs, tx));
      const arrays = await inTransaction(async (tx) => [
        ...(await viaArrays.insertEvents(inputs.slice(0, -1), tx)),
        ...(await viaArrays.insertEvents(inputs.slice(-1), tx)),
      ]);
      // Both answer every input, in input order, with sequences drawn in input order.
      expect(json.map((w) => w.uuid)).toEqual(inputs.map((e) => e.uuid));
      expect(json).toEqual(arrays);
      expect(json.map((w) => BigInt(w.sequence))).toEqual(
        [...json.map((w) => BigInt(w.sequence))].sort((a, b) => (a < b ? -1 : 1)),
      );
      const a = await stored(jsonTables);
      const b = await stored(arrayTables);
      expect(a.events).toHaveLength(JSON_INSERT_FROM);
      expect(a.deliveries.length).toBeGreaterThan(JSON_INSERT_FROM);
      expect(a).toEqual(b);
      // And what they store is what went in.
      const byUuid = new Map(a.events.map((e) => [e.uuid, e]));
      for (const e of inputs) {
        const row = byUuid.get(e.uuid);
        expect(row?.payload === null ? null : JSON.parse(row?.payload ?? '')).toEqual(
          JSON.parse(e.payload),
        );
        expect(row?.headers_sql_null).toBe(false);
        expect(row?.caused_by).toBe(e.causedBy);
        expect(row?.occurred_at).toBe(
          e.occurredAt.toISOString().replace('T', ' ').replace('Z', '000'),
        );
      }
      expect(a.events.filter((e) => e.headers_type === 'null')).toHaveLength(
        inputs.filter((e) => e.headers === 'null').length,
      );
    });

    it('stores a lone surrogate in a text column as the arrays form does (U+FFFD), at the threshold too', async () => {
      const inputs = Array.from({ length: JSON_INSERT_FROM }, (_, n) => ({
        ...input(20_000 + n),
        actor: n === 5 ? 'user:\ud800:lone' : null,
        deliveries: [],
      }));
      const json = await inTransaction((tx) => viaJson.insertEvents(inputs, tx));
      const arrays = await inTransaction((tx) => viaArrays.insertEvents(inputs, tx));
      expect(json.map((w) => w.uuid)).toEqual(arrays.map((w) => w.uuid));
      const actor = (t: TableNames) =>
        db.sequelize.query<{ actor: string }>(`SELECT actor FROM ${t.events} WHERE uuid = :uuid`, {
          type: QueryTypes.SELECT,
          replacements: { uuid: inputs[5]?.uuid },
        });
      expect(await actor(jsonTables)).toEqual([{ actor: 'user:\ufffd:lone' }]);
      expect(await actor(arrayTables)).toEqual([{ actor: 'user:\ufffd:lone' }]);
    });

    it('skips a repeated idempotency key in the JSON form and answers it from the stored event', async () => {
      const first = { ...input(6), idempotencyKey: `idem-${randomUUID()}` };
      await inTransaction((tx) => viaJson.insertEvents([first], tx));
      const batch = Array.from({ length: JSON_INSERT_FROM }, (_, n) => input(1000 + n * 6 + 1));
      batch[7] = { ...input(12), idempotencyKey: first.idempotencyKey };
      const written = await inTransaction((tx) => viaJson.insertEvents(batch, tx));
      expect(written).toHaveLength(JSON_INSERT_FROM);
      expect(written[7]).toMatchObject({ uuid: first.uuid, inserted: false });
      expect(written.filter((w) => !w.inserted)).toHaveLength(1);
      const [{ n }] = await db.sequelize.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${jsonTables.events} WHERE uuid = :uuid`,
        { type: QueryTypes.SELECT, replacements: { uuid: batch[7]?.uuid } },
      );
      expect(n).toBe(0);
    });

    it('queues one NOTIFY per topic in the JSON form, sent on commit', async () => {
      const batch = Array.from({ length: JSON_INSERT_FROM }, (_, n) => input(5000 + n));
      const topics = [...new Set(batch.map((e) => e.name))].sort();
      const heard = await heardDuring(topics.length, () =>
        inTransaction((tx) => viaJson.insertEvents(batch, tx)),
      );
      expect([...heard].sort()).toEqual(topics);
    });

    it('takes the ordering keys’ locks in the JSON form: a writer of the same key waits', async () => {
      const batch = Array.from({ length: JSON_INSERT_FROM }, (_, n) => ({
        ...input(2 * n + 1),
        orderingKey: n === 3 ? 'the-key' : null,
      }));
      const first = await db.sequelize.transaction();
      await viaJson.insertEvents(batch, first);
      const second = await db.sequelize.transaction();
      let done = false;
      const waiting = viaJson
        .insertEvents([{ ...input(1), orderingKey: 'the-key' }], second)
        .then((w) => {
          done = true;
          return w;
        });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(done).toBe(false);
      await first.commit();
      const [late] = await waiting;
      await second.commit();
      const [{ seq }] = await db.sequelize.query<{ seq: string }>(
        `SELECT id::text AS seq FROM ${jsonTables.events} WHERE uuid = :uuid`,
        { type: QueryTypes.SELECT, replacements: { uuid: batch[3]?.uuid } },
      );
      expect(BigInt(late?.sequence ?? 0)).toBeGreaterThan(BigInt(seq));
    });

    describe('the one-event form (one event, one delivery row: fire()’s common case)', () => {
      let oneTables: TableNames;
      let pairTables: TableNames;
      let viaOne: PostgresStore;
      let viaPairs: PostgresStore;
      beforeAll(async () => {
        oneTables = tableNames('one_', db.outboxOptions.schema);
        pairTables = tableNames('pair_', db.outboxOptions.schema);
        viaOne = new PostgresStore(db.sequelize, oneTables, CHANNEL);
        viaPairs = new PostgresStore(db.sequelize, pairTables, CHANNEL);
        await viaOne.migrate();
        await viaPairs.migrate();
      });

      /** The n-th input with exactly one delivery row (its first, or a plain one). */
      const single = (n: number): EventRowInput => {
        const e = input(n);
        return {
          ...e,
          deliveries: e.deliveries.slice(0, 1).length
            ? e.deliveries.slice(0, 1)
            : [
                {
                  receiverKey: 'r.only',
                  target: '',
                  maxAttempts: 3,
                  availableAt: e.recordedAt,
                  dueAt: null,
                },
              ],
        };
      };

      /** The statements prepared on the transaction's connection whose name starts so. */
      const prepared = async (tx: Transaction, kind: string) =>
        (
          await db.sequelize.query<{ name: string }>(
            `SELECT name FROM pg_prepared_statements WHERE name LIKE :like`,
            {
              type: QueryTypes.SELECT,
              transaction: tx,
              replacements: { like: `outboxkit_${kind}_%` },
            },
          )
        ).map((r) => r.name);

      it('writes identical rows and sequences as the arrays form, and is the form taken', async () => {
        const inputs = Array.from({ length: 60 }, (_, n) => single(n));
        const one = await inTransaction(async (tx) => {
          const written = [];
          for (const e of inputs) written.push(...(await viaOne.insertEvents([e], tx)));
          // Two texts: with ON CONFLICT for an event with an idempotency key, without it
          // for one that has none (every sixth input has one).
          expect(await prepared(tx, 'insert_one')).toHaveLength(2);
          return written;
        });
        const pairs = await inTransaction(async (tx) => {
          const written = [];
          for (let i = 0; i < inputs.length; i += 2) {
            written.push(...(await viaPairs.insertEvents(inputs.slice(i, i + 2), tx)));
          }
          return written;
        });
        expect(one.map((w) => w.uuid)).toEqual(inputs.map((e) => e.uuid));
        expect(one).toEqual(pairs);
        const a = await stored(oneTables);
        const b = await stored(pairTables);
        expect(a.events).toHaveLength(inputs.length);
        expect(a.deliveries).toHaveLength(inputs.length);
        expect(a).toEqual(b);
      });

      it('skips a repeated idempotency key and answers it from the stored event', async () => {
        const key = `idem-${randomUUID()}`;
        const first = { ...single(100), idempotencyKey: key };
        const [stored1] = await inTransaction((tx) => viaOne.insertEvents([first], tx));
        const repeat = { ...single(101), idempotencyKey: key };
        const [again] = await inTransaction((tx) => viaOne.insertEvents([repeat], tx));
        expect(stored1).toMatchObject({ uuid: first.uuid, inserted: true });
        expect(again).toEqual({ ...stored1, inserted: false });
        const [{ events, deliveries }] = await db.sequelize.query<{
          events: number;
          deliveries: number;
        }>(
          `SELECT (SELECT count(*)::int FROM ${oneTables.events} WHERE idempotency_key = :key) AS events,
                  (SELECT count(*)::int FROM ${oneTables.deliveries} d JOIN ${oneTables.events} e ON e.id = d.event_id
                    WHERE e.idempotency_key = :key) AS deliveries`,
          { type: QueryTypes.SELECT, replacements: { key } },
        );
        expect({ events, deliveries }).toEqual({ events: 1, deliveries: 1 });
      });

      it('queues its topic’s NOTIFY, sent on commit; none for a repeat or a rollback', async () => {
        const key = `idem-${randomUUID()}`;
        const heard = await heardDuring(2, async () => {
          const rolledBack = await db.sequelize.transaction();
          await viaOne.insertEvents([{ ...single(200), name: 'rolled.Back' }], rolledBack);
          await rolledBack.rollback();
          await inTransaction((tx) =>
            viaOne.insertEvents([{ ...single(201), name: 'first.Time', idempotencyKey: key }], tx),
          );
          await inTransaction((tx) =>
            viaOne.insertEvents([{ ...single(202), name: 'a.Repeat', idempotencyKey: key }], tx),
          );
          await inTransaction((tx) =>
            viaOne.insertEvents([{ ...single(203), name: 'last.One' }], tx),
          );
        });
        // The last one's NOTIFY arriving shows the earlier ones would have by now.
        expect(heard).toEqual(['first.Time', 'last.One']);
      });

      it('takes its key’s slot lock: it waits for a batch writer of the key, and a batch for it', async () => {
        const key = `key-${randomUUID()}`;
        const waitsBehind = async (
          holder: (tx: Transaction) => Promise<unknown>,
          waiter: (tx: Transaction) => Promise<unknown>,
        ) => {
          const first = await db.sequelize.transaction();
          await holder(first);
          const second = await db.sequelize.transaction();
          let done = false;
          const waiting = waiter(second).then(() => {
            done = true;
          });
          await new Promise((resolve) => setTimeout(resolve, 300));
          const blocked = !done;
          await first.commit();
          await waiting;
          await second.commit();
          return blocked;
        };
        const batch = (tx: Transaction) =>
          viaOne.insertEvents([single(300), { ...single(301), orderingKey: key }, single(302)], tx);
        const lone = (tx: Transaction) =>
          viaOne.insertEvents([{ ...single(303), orderingKey: key }], tx);
        expect(await waitsBehind(batch, lone)).toBe(true);
        expect(await waitsBehind(lone, batch)).toBe(true);
        // A lone writer of another key does not wait.
        const other = (tx: Transaction) =>
          viaOne.insertEvents([{ ...single(304), orderingKey: null }], tx);
        expect(await waitsBehind(lone, other)).toBe(false);
      });
    });
  },
);
