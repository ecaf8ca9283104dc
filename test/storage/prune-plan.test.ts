import { QueryTypes } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { postgresDialect } from '../../src/storage/postgres/dialect.js';
import { POSTGRES_PRUNE } from '../../src/storage/postgres/prune.js';
import { pruneStatements } from '../../src/storage/sql/prune.js';
import { sqliteDialect } from '../../src/storage/sqlite/dialect.js';
import { SQLITE_PRUNE } from '../../src/storage/sqlite/prune.js';
import { tableNames } from '../../src/storage/tables.js';
import {
  postgresTestSchema,
  sqliteTestDatabase,
  type TestDatabase,
} from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';

const config = defineOutbox({
  events: { 'a.Happened': event({ schema: z.object({ n: z.number() }) }) },
  receivers: { 'r.one': receiver('a.Happened', { handle: () => {} }) },
});

const HISTORY = 60_000;

/**
 * A prune with nothing due must not read history: every one of its four queries reads a
 * partial index of live rows (docs/retention.md). Pinned on a table of 60,000 settled
 * events inside the ordinary window (and their 60,000 delivery rows), beside a few live
 * events of each retention, custom and generic plan alike.
 */
describeEachDialect('the prune plan on a large table', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await (dialect.name === 'postgres' ? postgresTestSchema() : sqliteTestDatabase());
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      wakeup: null,
      logger: silentLogger,
    });
    await outbox.migrate();
    const t = tableNames('outbox_', db.outboxOptions.schema);
    if (dialect.name === 'postgres') {
      await db.sequelize.query(`
        INSERT INTO ${t.events} (uuid, name, payload, occurred_at, recorded_at, retention_seconds, delete_when)
        SELECT gen_random_uuid(), 'a.Happened', jsonb_build_object('n', g), now(), now() - interval '1 hour',
               CASE WHEN g % 600 = 1 THEN 86400 END,
               CASE WHEN g % 600 = 2 THEN 'succeeded' WHEN g % 600 = 3 THEN 'settled' END
        FROM generate_series(1, ${HISTORY}) g;
        INSERT INTO ${t.deliveries} (event_id, receiver_key, status, max_attempts, available_at, completed_at, succeeded_at)
        SELECT id, 'r.one', CASE WHEN id % 600 IN (1, 2, 3) THEN 'pending' ELSE 'succeeded' END, 5, now(), now(), now()
        FROM ${t.events};
        ANALYZE ${t.events};
        ANALYZE ${t.deliveries};`);
    } else {
      const now = Date.now();
      await db.sequelize.query(`
        WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ${HISTORY})
        INSERT INTO ${t.events} (uuid, name, payload, occurred_at, recorded_at, retention_seconds, delete_when)
        SELECT 'u' || n, 'a.Happened', '{}', ${now}, ${now - 3_600_000},
               CASE WHEN n % 600 = 1 THEN 86400 END,
               CASE WHEN n % 600 = 2 THEN 'succeeded' WHEN n % 600 = 3 THEN 'settled' END
        FROM g`);
      await db.sequelize.query(`
        INSERT INTO ${t.deliveries} (event_id, receiver_key, status, max_attempts, available_at, completed_at, succeeded_at)
        SELECT id, 'r.one', CASE WHEN id % 600 IN (1, 2, 3) THEN 'pending' ELSE 'succeeded' END, 5, ${now}, ${now}, ${now}
        FROM ${t.events}`);
    }
    // With nothing due, the prune finds nothing.
    const found = await runtimeOf(outbox).store.findDueEvents(
      { rule: 'retention', now: new Date(), cutoff: new Date(Date.now() - 7 * 86_400_000) },
      1000,
    );
    expect(found).toEqual([]);
  }, 120_000);
  afterAll(() => db.cleanup());

  const statements = () =>
    dialect.name === 'postgres'
      ? pruneStatements(
          tableNames('outbox_', db.outboxOptions.schema),
          postgresDialect,
          POSTGRES_PRUNE,
        )
      : pruneStatements(tableNames('outbox_', undefined), sqliteDialect, SQLITE_PRUNE);

  it('reads only partial indexes of live rows, never a scan of the history', async () => {
    const { dueRetention } = statements();
    if (dialect.name === 'postgres') {
      const plan = await db.sequelize.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${dueRetention}`, {
        bind: [new Date(), new Date(Date.now() - 7 * 86_400_000), 1000],
        type: QueryTypes.SELECT,
      });
      const custom = plan.map((r) => r['QUERY PLAN']).join('\n');
      const generic = await db.sequelize.transaction(async (transaction) => {
        await db.sequelize.query('SET LOCAL plan_cache_mode = force_generic_plan', { transaction });
        await db.sequelize.query(`PREPARE outboxkit_prune_plan AS ${dueRetention}`, {
          transaction,
        });
        const rows = await db.sequelize.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN EXECUTE outboxkit_prune_plan(now(), now() - interval '7 days', 1000)`,
          { type: QueryTypes.SELECT, transaction },
        );
        await db.sequelize.query('DEALLOCATE outboxkit_prune_plan', { transaction });
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      });
      for (const text of [custom, generic]) {
        for (const index of [
          'outbox_deliveries_settled',
          'outbox_deliveries_unconsumed',
          'outbox_events_recorded',
          'outbox_events_own_window',
          'outbox_events_delete_succeeded',
          'outbox_events_delete_settled',
        ])
          expect(text).toContain(index);
        expect(text).not.toMatch(/Seq Scan on outbox_events/);
        expect(text).not.toMatch(/Seq Scan on outbox_deliveries/);
      }
    } else {
      const rows = await db.sequelize.query<{ detail: string }>(
        `EXPLAIN QUERY PLAN ${dueRetention}`,
        {
          bind: [Date.now(), Date.now() - 7 * 86_400_000, 1000],
          type: QueryTypes.SELECT,
        },
      );
      const text = rows.map((r) => r.detail).join('\n');
      // (Settled reads an event's own rows through deliveries_queue here: still never
      // history, only the rows of the live event at hand.)
      for (const index of [
        'outbox_deliveries_unconsumed',
        'outbox_events_recorded',
        'outbox_events_own_window',
        'outbox_events_delete_succeeded',
        'outbox_events_delete_settled',
      ])
        expect(text).toContain(index);
      // SQLite names a full scan of a table "SCAN <alias>" with no index after it (e:
      // events; o, u, n: deliveries).
      expect(text).not.toMatch(/\bSCAN [eoun]\s*$/m);
    }
  });
});
