import { QueryTypes } from 'sequelize';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import { postgresTestSchema, type TestDatabase } from '../../testing/databases.js';

const config = defineOutbox({
  events: { 'a.Happened': event({ schema: z.object({ n: z.number() }) }) },
  receivers: { 'r.one': receiver('a.Happened', { handle: () => {} }) },
});

/** The claim text the store runs, for tables of `prefix` in the test schema. */
async function claimText(db: TestDatabase, prefix: string): Promise<string> {
  const { postgresStatements } = await import('../../src/storage/postgres.js');
  const { tableNames } = await import('../../src/storage/tables.js');
  return postgresStatements(tableNames(prefix, db.outboxOptions.schema), undefined).claim;
}

/**
 * On PostgreSQL 15, `WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED)` sometimes plans a full
 * scan of the deliveries table; the claim uses `id = ANY(ARRAY(SELECT …))`, which keeps the
 * index plan. Checked on a large table, not an empty one.
 */
describe.skipIf(!inject('pgAvailable'))('the claim plan on a large table [postgres]', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await postgresTestSchema();
  });
  afterAll(() => db.cleanup());

  it('reads the partial index of the owed rows, not a full scan of the deliveries table', async () => {
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      wakeup: null,
      logger: silentLogger,
    });
    await outbox.migrate();
    const s = `"${db.outboxOptions.schema}"`;
    // 50,000 events, 40,000 of them already delivered, seeded in SQL for speed.
    await db.sequelize.query(`
      INSERT INTO ${s}.outbox_events (uuid, name, payload, occurred_at)
      SELECT gen_random_uuid(), 'a.Happened', jsonb_build_object('n', g), now() FROM generate_series(1, 50000) g;
      INSERT INTO ${s}.outbox_deliveries (event_id, receiver_key, status, max_attempts, available_at, ordering_key)
      SELECT id, 'r.one', CASE WHEN id <= 40000 THEN 'succeeded' ELSE 'pending' END, 5, now(), CASE WHEN id % 3 = 0 THEN 'k' || (id % 100) END
      FROM ${s}.outbox_events;
      ANALYZE ${s}.outbox_deliveries;`);
    const claim = await claimText(db, 'outbox_');
    const at = new Date(Date.now() + 1000);
    const plan = await db.sequelize.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${claim}`, {
      bind: ['w', new Date(), new Date(Date.now() + 60_000), at, false, 500, [], null],
      type: QueryTypes.SELECT,
    });
    const text = plan.map((r) => r['QUERY PLAN']).join('\n');
    expect(text).toContain('outbox_deliveries_queue');
    expect(text).not.toMatch(/Seq Scan on outbox_deliveries/);
    // The store runs it prepared: after five runs PostgreSQL may switch to a generic plan,
    // planned without the parameters' values. That plan must hold too.
    const generic = await db.sequelize.transaction(async (transaction) => {
      await db.sequelize.query('SET LOCAL plan_cache_mode = force_generic_plan', { transaction });
      await db.sequelize.query(`PREPARE outboxkit_claim_plan AS ${claim}`, { transaction });
      const rows = await db.sequelize.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN EXECUTE outboxkit_claim_plan('w', now(), now() + interval '1 minute', now() + interval '1 second', false, 500, '{}', NULL)`,
        { type: QueryTypes.SELECT, transaction },
      );
      await db.sequelize.query('DEALLOCATE outboxkit_claim_plan', { transaction });
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
    expect(generic).toContain('outbox_deliveries_queue');
    expect(generic).not.toMatch(/Seq Scan on outbox_deliveries/);
    // A lane's claim (the default lane leaving a named lane's keys out, a named lane
    // taking only its own) and a topic relay's read the same index, custom and generic
    // plan alike.
    const { postgresClaim } = await import('../../src/storage/postgres/statements.js');
    const { tableNames } = await import('../../src/storage/tables.js');
    const t = tableNames('outbox_', db.outboxOptions.schema);
    const none = {
      receiverKeys: false,
      excludeReceiverKeys: false,
      topics: false,
      excludeTopics: false,
      onlyEvents: false,
    };
    for (const [shape, extra, literals] of [
      [{ ...none, excludeReceiverKeys: true }, [['r.mail']], `'{r.mail}'`],
      [{ ...none, receiverKeys: true }, [['r.one']], `'{r.one}'`],
      [{ ...none, topics: true }, [[], ['a.']], `'{}', '{a.}'`],
    ] as const) {
      const laneClaim = postgresClaim(t, shape);
      const custom = await db.sequelize.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${laneClaim}`, {
        bind: ['w', new Date(), new Date(Date.now() + 60_000), at, false, 500, [], null, ...extra],
        type: QueryTypes.SELECT,
      });
      const customText = custom.map((r) => r['QUERY PLAN']).join('\n');
      expect(customText).toContain('outbox_deliveries_queue');
      expect(customText).not.toMatch(/Seq Scan on outbox_deliveries/);
      const laneGeneric = await db.sequelize.transaction(async (transaction) => {
        await db.sequelize.query('SET LOCAL plan_cache_mode = force_generic_plan', { transaction });
        await db.sequelize.query(`PREPARE outboxkit_lane_plan AS ${laneClaim}`, { transaction });
        const rows = await db.sequelize.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN EXECUTE outboxkit_lane_plan('w', now(), now() + interval '1 minute', now() + interval '1 second', false, 500, '{}', NULL, ${literals})`,
          { type: QueryTypes.SELECT, transaction },
        );
        await db.sequelize.query('DEALLOCATE outboxkit_lane_plan', { transaction });
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      });
      expect(laneGeneric).toContain('outbox_deliveries_queue');
      expect(laneGeneric).not.toMatch(/Seq Scan on outbox_deliveries/);
    }
    // And a real claim through the store takes 500 rows, oldest first.
    const { runtimeOf } = await import('../../src/runtime.js');
    const rows = await runtimeOf(outbox).store.claim({
      token: { workerId: 'w', claimedAt: new Date() },
      now: new Date(Date.now() + 1000),
      leaseUntil: new Date(Date.now() + 60_000),
      limit: 500,
    });
    expect(rows).toHaveLength(500);
    expect(Number(rows[0].event.sequence)).toBe(40001);
  });

  it("commits a claim without waiting for its WAL flush, and leaves the connection's setting as it was", async () => {
    const { Sequelize } = await import('sequelize');
    const one = new Sequelize(db.url, { logging: false, pool: { max: 1, min: 1 } });
    try {
      const outbox = createOutbox(config, {
        ...db.outboxOptions,
        sequelize: one,
        tablePrefix: 'sync_',
        wakeup: null,
        logger: silentLogger,
      });
      await outbox.migrate();
      await outbox.fire('a.Happened', { n: 1 });
      const claim = await claimText(db, 'sync_');
      const bind = [
        'w',
        new Date(),
        new Date(Date.now() + 60_000),
        new Date(Date.now() + 1000),
        false,
        10,
        [],
        null,
      ];
      const setting = (transaction?: import('sequelize').Transaction) =>
        one
          .query<{ synchronous_commit: string }>('SHOW synchronous_commit', {
            type: QueryTypes.SELECT,
            transaction,
          })
          .then((r) => r[0].synchronous_commit);
      // Inside the claim's transaction the commit is asynchronous ...
      const inside = await one.transaction(async (transaction) => {
        const rows = await one.query(claim, { bind, type: QueryTypes.SELECT, transaction });
        expect(rows).toHaveLength(1);
        return setting(transaction);
      });
      expect(inside).toBe('off');
      // ... and only there: the pool's one connection is back to the server's default.
      const { runtimeOf } = await import('../../src/runtime.js');
      await outbox.fire('a.Happened', { n: 2 });
      const claimed = await runtimeOf(outbox).store.claim({
        token: { workerId: 'w2', claimedAt: new Date() },
        now: new Date(Date.now() + 1000),
        leaseUntil: new Date(Date.now() + 60_000),
        limit: 10,
      });
      expect(claimed).toHaveLength(1);
      expect(await setting()).toBe('on');
    } finally {
      await one.close();
    }
  });
});
