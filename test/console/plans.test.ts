import { QueryTypes, Sequelize } from 'sequelize';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  deadLettersPageSql,
  deliveriesOfEventSql,
  eventBySequenceSql,
  eventByUuidSql,
  orderingKeyRowsSql,
  recentEventsSql,
} from '../../console/reads.js';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import { postgresDialect } from '../../src/storage/postgres/dialect.js';
import { sqliteDialect } from '../../src/storage/sqlite/dialect.js';
import { tableNames } from '../../src/storage/tables.js';
import { postgresTestSchema, type TestDatabase } from '../../testing/databases.js';

const config = defineOutbox({
  events: { 'a.Happened': event({ schema: z.object({ n: z.number() }) }) },
  receivers: {
    'r.one': receiver('a.Happened', { handle: () => {} }),
    'r.two': receiver('a.Happened', { handle: () => {} }),
  },
});

/**
 * Every statement of the console's pages reads an index, never the history: on 50,000
 * events whose rows have nearly all succeeded, with 100 dead letters and a small backlog,
 * each page's plan names the index it reads and no sequential scan of either table. The
 * health page's own statements (health(), the dead letters holding rows back, quiet
 * receivers) are the CLI's, pinned in test/ops/health-plan.test.ts.
 */
describe.skipIf(!inject('pgAvailable'))(
  "the console's page plans on a large table [postgres]",
  () => {
    let db: TestDatabase;
    const t = () => tableNames('outbox_', db.outboxOptions.schema);
    const d = postgresDialect;
    const plan = async (sql: string, bind: unknown[]) =>
      (
        await db.sequelize.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, {
          bind,
          type: QueryTypes.SELECT,
        })
      )
        .map((r) => r['QUERY PLAN'])
        .join('\n');
    const noScan = (text: string) => {
      expect(text).not.toMatch(/Seq Scan on outbox_deliveries/);
      expect(text).not.toMatch(/Seq Scan on outbox_events/);
    };

    beforeAll(async () => {
      db = await postgresTestSchema();
      const outbox = createOutbox(config, {
        ...db.outboxOptions,
        wakeup: null,
        logger: silentLogger,
      });
      await outbox.migrate();
      const s = `"${db.outboxOptions.schema}"`;
      await db.sequelize.query(`
      INSERT INTO ${s}.outbox_events (uuid, name, payload, occurred_at, ordering_key)
      SELECT gen_random_uuid(), 'a.Happened', jsonb_build_object('n', g), now(), 'k' || (g % 500)
      FROM generate_series(1, 50000) g;
      INSERT INTO ${s}.outbox_deliveries (event_id, receiver_key, status, max_attempts, available_at,
        succeeded_at, completed_at, ordering_key)
      SELECT id, r, CASE WHEN id <= 49500 THEN 'succeeded' WHEN id <= 49600 THEN 'dead' ELSE 'pending' END,
             5, now(), CASE WHEN id <= 49500 THEN now() END,
             CASE WHEN id <= 49600 THEN now() - (id || ' seconds')::interval END, 'k' || (id % 500)
      FROM ${s}.outbox_events, (VALUES ('r.one'), ('r.two')) AS k(r);
      ANALYZE ${s}.outbox_events;
      ANALYZE ${s}.outbox_deliveries;`);
    }, 60_000);
    afterAll(() => db.cleanup());

    it('dead letters, newest first: the dead-letter index backwards, the events by primary key, the row behind by the ordering index', async () => {
      const pages: [boolean, unknown[]][] = [
        [false, [null, null, null, 51, 1000]],
        [false, ['r.one', null, null, 51, 1000]],
        [true, [null, new Date(Date.now() - 49_550_000), '99000', 51, 1000]],
      ];
      for (const [after, bind] of pages) {
        const text = await plan(deadLettersPageSql(t(), d, after), bind);
        expect(text).toContain('outbox_deliveries_dead_letters');
        expect(text).toContain('outbox_events_pkey');
        expect(text).toContain('outbox_deliveries_ordering');
        noScan(text);
      }
    });

    it('events, newest first: the primary key backwards, from the first page and from a cursor', async () => {
      const pages: [boolean, unknown[]][] = [
        [false, [null, 51]],
        [true, ['30000', 51]],
      ];
      for (const [before, bind] of pages) {
        const text = await plan(recentEventsSql(t(), d, before), bind);
        expect(text).toContain('Index Scan Backward using outbox_events_pkey');
        noScan(text);
      }
    });

    it('one event: the uuid index; its causes by primary key; its rows through the owed and settled indexes', async () => {
      const byUuid = await plan(eventByUuidSql(t(), d), ['01890000-0000-7000-8000-000000000000']);
      expect(byUuid).toContain('outbox_events_uuid_key');
      const bySequence = await plan(eventBySequenceSql(t(), d), ['42']);
      expect(bySequence).toContain('outbox_events_pkey');
      const rows = await plan(deliveriesOfEventSql(t(), d), ['42']);
      expect(rows).toContain('outbox_deliveries_queue');
      expect(rows).toContain('outbox_deliveries_settled');
      for (const text of [byUuid, bySequence, rows]) noScan(text);
    });

    it("an ordering key's live rows: the ordering index, a probe per receiver", async () => {
      const text = await plan(orderingKeyRowsSql(t(), d), ['k7', ['r.one', 'r.two'], 51]);
      expect(text).toContain('outbox_deliveries_ordering');
      expect(text).toMatch(/receiver_key\)::text = ANY/);
      noScan(text);
    });
  },
);

describe("the console's page plans [sqlite]", () => {
  let sequelize: Sequelize;
  const t = tableNames('outbox_', undefined);
  const d = sqliteDialect;
  const plan = async (sql: string, bind: unknown[]) =>
    (
      await sequelize.query<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, {
        bind,
        type: QueryTypes.SELECT,
      })
    ).map((r) => r.detail);
  /** No full scan of a table (`SCAN c` of a subquery's own rows is not one). */
  const noTableScan = (details: readonly string[]) =>
    expect(details.filter((x) => /^SCAN (x|e|h|b)$/.test(x))).toEqual([]);

  beforeAll(async () => {
    sequelize = new Sequelize('sqlite::memory:', { logging: false });
    await createOutbox(config, { sequelize, wakeup: null, logger: silentLogger }).migrate();
  });
  afterAll(() => sequelize.close());

  it('dead letters: the dead-letter index, the events by primary key, the ordering index per letter', async () => {
    const details = await plan(deadLettersPageSql(t, d, false), [null, null, null, 51, 1000]);
    expect(details).toContain('SCAN x USING INDEX outbox_deliveries_dead_letters');
    const next = await plan(deadLettersPageSql(t, d, true), [
      null,
      1_900_000_000_000,
      99,
      51,
      1000,
    ]);
    expect(next[0]).toMatch(
      /^SEARCH x USING INDEX outbox_deliveries_dead_letters \(completed_at<\?\)/,
    );
    noTableScan(next);
    expect(details.some((x) => /^SEARCH e USING INTEGER PRIMARY KEY/.test(x))).toBe(true);
    expect(
      details.some((x) => x.startsWith('SEARCH h') && x.includes('outbox_deliveries_ordering')),
    ).toBe(true);
    noTableScan(details);
  });

  it('events newest first, one event, its rows, and an ordering key: each by an index', async () => {
    // The rowid table itself, walked backwards from its end (its primary key) for LIMIT rows.
    const recent = await plan(recentEventsSql(t, d, false), [null, 51]);
    expect(recent).toEqual(['SCAN e']);
    const cursor = await plan(recentEventsSql(t, d, true), [30000, 51]);
    expect(cursor[0]).toMatch(/^SEARCH e USING INTEGER PRIMARY KEY \(rowid<\?\)/);
    const byUuid = await plan(eventByUuidSql(t, d), ['x']);
    expect(byUuid[0]).toMatch(
      /^SEARCH e USING INDEX sqlite_autoindex_outbox_events_\d \(uuid=\?\)/,
    );
    const bySequence = await plan(eventBySequenceSql(t, d), [42]);
    expect(bySequence[0]).toMatch(/^SEARCH e USING INTEGER PRIMARY KEY/);
    const rows = (await plan(deliveriesOfEventSql(t, d), [42])).join('\n');
    expect(rows).toContain('outbox_deliveries_queue');
    expect(rows).toContain('outbox_deliveries_settled');
    const key = (await plan(orderingKeyRowsSql(t, d), ['k7', '["r.one","r.two"]', 51])).join('\n');
    expect(key).toContain('outbox_deliveries_ordering');
    noTableScan([...cursor, ...byUuid, ...bySequence]);
  });
});
