import { QueryTypes, Sequelize } from 'sequelize';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import { holdingDeadLettersSql } from '../../src/ops/held-back.js';
import { postgresDialect } from '../../src/storage/postgres/dialect.js';
import { healthSql, lastSucceededSql } from '../../src/storage/sql/health.js';
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
 * health() and quietReceivers() must not read history: on a table of 100,000 settled rows
 * and a small backlog, the health reads the partial index deliveries_queue (migration 4:
 * the owed rows, claimed ones included) for the owed rows and the events by primary key,
 * deliveries_dead_letters for the dead rows, and each receiver's newest success by index
 * too.
 */
describe.skipIf(!inject('pgAvailable'))('the health plans on a large table [postgres]', () => {
  let db: TestDatabase;
  const plan = async (sql: string, bind: unknown[]) =>
    (
      await db.sequelize.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, {
        bind,
        type: QueryTypes.SELECT,
      })
    )
      .map((r) => r['QUERY PLAN'])
      .join('\n');

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
      INSERT INTO ${s}.outbox_events (uuid, name, payload, occurred_at)
      SELECT gen_random_uuid(), 'a.Happened', jsonb_build_object('n', g), now() FROM generate_series(1, 50000) g;
      INSERT INTO ${s}.outbox_deliveries (event_id, receiver_key, status, max_attempts, available_at, succeeded_at)
      SELECT id, r, CASE WHEN id <= 49500 THEN 'succeeded' WHEN id <= 49600 THEN 'dead' ELSE 'pending' END,
             5, now(), CASE WHEN id <= 49500 THEN now() END
      FROM ${s}.outbox_events, (VALUES ('r.one'), ('r.two')) AS k(r);
      ANALYZE ${s}.outbox_events;
      ANALYZE ${s}.outbox_deliveries;`);
  }, 60_000);
  afterAll(() => db.cleanup());

  it('the owed part of health() reads deliveries_queue, and the events by primary key', async () => {
    const t = tableNames('outbox_', db.outboxOptions.schema);
    const text = await plan(healthSql(t, postgresDialect), [new Date()]);
    expect(text).toContain('outbox_deliveries_queue');
    expect(text).not.toMatch(/Seq Scan on outbox_events/);
  });

  it('with the partial index on the dead rows, health() scans no part of the deliveries table', async () => {
    const t = tableNames('outbox_', db.outboxOptions.schema);
    const text = await plan(healthSql(t, postgresDialect), [new Date()]);
    expect(text).toContain('outbox_deliveries_queue');
    // a partial index holding only dead (or dead and orphaned) rows, never the history
    expect(text).toMatch(/outbox_deliveries_(dead_letters|unconsumed)/);
    expect(text).not.toMatch(/Seq Scan on outbox_deliveries/);
  });

  it("with migration 2's index on (receiver_key, succeeded_at), quietReceivers() probes it once per receiver", async () => {
    const t = tableNames('outbox_', db.outboxOptions.schema);
    const text = await plan(
      lastSucceededSql(t, postgresDialect),
      postgresDialect.bindRows(
        ['r.one', 'r.two', 'r.never'],
        [{ name: 'receiver_key', type: 'text', value: (k: string) => k }],
      ),
    );
    expect(text).toContain('outbox_deliveries_succeeded');
    expect(text).not.toMatch(/Seq Scan on outbox_deliveries/);
  });

  // Last: it gives the live rows ordering keys, which the plans above do not read.
  it("health's dead letters holding rows back: the dead rows by a partial index, the rows behind by the ordering index, never the history", async () => {
    const s = `"${db.outboxOptions.schema}"`;
    await db.sequelize.query(`
      UPDATE ${s}.outbox_deliveries SET ordering_key = 'k' || (event_id % 50) WHERE status <> 'succeeded';
      ANALYZE ${s}.outbox_deliveries;`);
    const t = tableNames('outbox_', db.outboxOptions.schema);
    const sql = holdingDeadLettersSql(t, postgresDialect);
    const text = await plan(sql, [20, 1000]);
    // the dead rows from a partial index of dead (or dead and orphaned) rows only
    expect(text).toMatch(/outbox_deliveries_(dead_letters|unconsumed)/);
    // the rows behind each one probed through the ordering index, the events by primary key
    expect(text).toContain('outbox_deliveries_ordering');
    expect(text).not.toMatch(/Seq Scan on outbox_deliveries/);
    expect(text).not.toMatch(/Seq Scan on outbox_events/);
    // and it answers: every dead letter (events 49501-49600) has owed rows of its key behind it
    const rows = await db.sequelize.query<{ held_back: string }>(sql, {
      bind: [20, 1000],
      type: QueryTypes.SELECT,
    });
    expect(rows).toHaveLength(20);
    expect(Number(rows[0].held_back)).toBeGreaterThan(0);
  });
});

describe("health's dead letters holding rows back [sqlite]", () => {
  it('reads the dead-letter index and probes the ordering index per dead letter, never a scan of the rows behind', async () => {
    const sequelize = new Sequelize('sqlite::memory:', { logging: false });
    const outbox = createOutbox(config, { sequelize, wakeup: null, logger: silentLogger });
    try {
      await outbox.migrate();
      const sql = holdingDeadLettersSql(tableNames('outbox_', undefined), sqliteDialect);
      const plan = (
        await sequelize.query<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, {
          bind: [20, 1000],
          type: QueryTypes.SELECT,
        })
      ).map((r) => r.detail);
      expect(plan).toContain('SCAN x USING INDEX outbox_deliveries_dead_letters');
      expect(
        plan.filter((d) => d.startsWith('SEARCH h') && d.includes('outbox_deliveries_ordering')),
      ).toHaveLength(2);
      expect(plan.filter((d) => /^SCAN (h|e)\b/.test(d))).toEqual([]);
    } finally {
      await outbox.close();
      await sequelize.close();
    }
  });
});
