import { QueryTypes } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';

const config = defineOutbox({
  events: { 'a.Happened': event({ schema: z.object({ n: z.number() }) }) },
  receivers: { 'r.one': receiver('a.Happened', { handle: () => {} }) },
});

describeEachDialect('migrate()', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('is idempotent and safe when two processes migrate at once', async () => {
    const a = createOutbox(config, { ...db.outboxOptions, wakeup: null, logger: silentLogger });
    const other = db.connectAgain();
    const b = createOutbox(config, {
      ...db.outboxOptions,
      sequelize: other,
      wakeup: null,
      logger: silentLogger,
    });
    await Promise.all([a.migrate(), b.migrate(), a.migrate()]);
    await a.migrate();
    const versions = await db.sequelize.query(
      `SELECT version FROM ${db.outboxOptions.schema ? `"${db.outboxOptions.schema}".` : ''}"outbox_migrations" ORDER BY version`,
      { type: QueryTypes.SELECT },
    );
    expect(versions).toEqual([{ version: 1 }, { version: 2 }, { version: 3 }]);
    // And the tables work from both connections.
    await a.fire('a.Happened', { n: 1 });
    await b.fire('a.Happened', { n: 2 });
    expect((await a.countDeliveries()).pending).toBe(2);
  });

  it('creates the indexes that serve the claim (partial where the database has them)', async () => {
    const rows =
      dialect.name === 'postgres'
        ? await db.sequelize.query<{ indexdef: string }>(
            `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'outbox_deliveries'`,
            { bind: [db.outboxOptions.schema], type: QueryTypes.SELECT },
          )
        : await db.sequelize.query<{ indexdef: string }>(
            `SELECT sql AS indexdef FROM sqlite_master WHERE type = 'index' AND tbl_name = 'outbox_deliveries' AND sql IS NOT NULL`,
            { type: QueryTypes.SELECT },
          );
    // The rows a claim can take by event sequence, and the claimed ones by lease end: the
    // claim never steps over rows other batches hold (migration 3 replaced deliveries_owed).
    const ready = rows.find((r) => r.indexdef.includes('outbox_deliveries_ready'));
    expect(ready?.indexdef).toMatch(/\(event_id, id\) WHERE .*status.*'pending'.*'failed'/);
    expect(ready?.indexdef).not.toMatch(/'claimed'/);
    const leased = rows.find((r) => r.indexdef.includes('outbox_deliveries_leased'));
    expect(leased?.indexdef).toMatch(/\(lease_until, id\) WHERE .*status.*'claimed'/);
    expect(rows.some((r) => r.indexdef.includes('outbox_deliveries_owed'))).toBe(false);
    const key = rows.find((r) => r.indexdef.includes('outbox_deliveries_key'));
    expect(key?.indexdef).toMatch(/ordering_key IS NOT NULL/);
  });

  // A never-analyzed table has no statistics (reltuples -1 on PostgreSQL 14+), and the
  // planner's guess for it made a claim 8x slower until autovacuum came round.
  it.skipIf(dialect.name !== 'postgres')(
    'analyzes the tables it creates, so the first claims are planned from statistics',
    async () => {
      const outbox = createOutbox(config, {
        ...db.outboxOptions,
        tablePrefix: 'analyzed_',
        wakeup: null,
        logger: silentLogger,
      });
      await outbox.migrate();
      const tables = await db.sequelize.query<{ relname: string; reltuples: number }>(
        `SELECT c.relname, c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname LIKE 'analyzed\\_%' ORDER BY c.relname`,
        { bind: [db.outboxOptions.schema], type: QueryTypes.SELECT },
      );
      expect(tables.map((t) => t.relname)).toEqual([
        'analyzed_deliveries',
        'analyzed_events',
        'analyzed_migrations',
        'analyzed_receiver_last_success',
      ]);
      // -1 is "never analyzed"; an analyzed table counts its rows (0 or more).
      const unanalyzed = tables.filter((t) => Number(t.reltuples) < 0).map((t) => t.relname);
      expect(unanalyzed).toEqual([]);
    },
  );

  // SQLite never refreshes statistics by itself: an ANALYZE of the new, empty tables would
  // leave its planner believing them empty for good.
  it.skipIf(dialect.name !== 'sqlite')(
    'leaves SQLite without statistics that would freeze the new tables as empty',
    async () => {
      const outbox = createOutbox(config, {
        ...db.outboxOptions,
        tablePrefix: 'unanalyzed_',
        wakeup: null,
        logger: silentLogger,
      });
      await outbox.migrate();
      const statTables = await db.sequelize.query<{ name: string }>(
        `SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'`,
        { type: QueryTypes.SELECT },
      );
      const stats =
        statTables.length === 0
          ? []
          : await db.sequelize.query<{ tbl: string }>(
              `SELECT tbl FROM sqlite_stat1 WHERE tbl LIKE 'unanalyzed%'`,
              { type: QueryTypes.SELECT },
            );
      expect(stats).toEqual([]);
    },
  );

  it('a table prefix keeps two outboxes apart in one database', async () => {
    const a = createOutbox(config, {
      ...db.outboxOptions,
      tablePrefix: 'first_',
      wakeup: null,
      logger: silentLogger,
    });
    const b = createOutbox(config, {
      ...db.outboxOptions,
      tablePrefix: 'second_',
      wakeup: null,
      logger: silentLogger,
    });
    await a.migrate();
    await b.migrate();
    await a.fire('a.Happened', { n: 1 });
    expect((await a.countDeliveries()).pending).toBe(1);
    expect((await b.countDeliveries()).pending).toBe(0);
  });
});
