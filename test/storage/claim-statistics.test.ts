/**
 * Issue 9: what the claim reads depends on the deliveries table's statistics being current.
 * With them (autovacuum's ANALYZE, or one run by hand), it reads the owed rows' partial index
 * in order and stops after a batch, whatever the dead rows delivered events left behind; with
 * the statistics `migrate()` left on the empty table, never refreshed (a server running
 * without autovacuum, as the CI server does), it reads every owed index entry — dead ones
 * included — and sorts them, a cost that grows with every event delivered. See
 * bench/README.md ("Issue 9, explained") and docs/retention.md ("Autovacuum").
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import { postgresStatements } from '../../src/storage/postgres.js';
import { tableNames } from '../../src/storage/tables.js';
import { postgresTestSchema, type TestDatabase } from '../../testing/databases.js';

const config = defineOutbox({
  events: { 'a.Happened': event({ schema: z.object({ n: z.number() }) }) },
  receivers: { 'r.one': receiver('a.Happened', { deliver: async () => {} }) },
});

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  Plans?: PlanNode[];
}

function* nodes(n: PlanNode): Generator<PlanNode> {
  yield n;
  for (const c of n.Plans ?? []) yield* nodes(c);
}

const HISTORY = 10_000;
const DELIVERED = 5_000;
const OWED = 20_000;
const BATCH = 100;

describe.skipIf(!inject('pgAvailable'))('the claim and the statistics [postgres]', () => {
  let db: TestDatabase;
  let client: pg.Client;
  beforeAll(async () => {
    db = await postgresTestSchema();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await db.cleanup();
  });

  /**
   * Tables made by `migrate()` (which ANALYZEs them empty) in their own prefix, then: a
   * history of settled events, events delivered since (each row claimed and then marked
   * succeeded, so its pending and claimed versions are dead and still indexed as owed: no
   * VACUUM ran), and a wave of owed ones. Returns the claim's owed-index scan, explained.
   */
  async function claimAfterTraffic(prefix: string, analyze: boolean) {
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      tablePrefix: prefix,
      wakeup: null,
      logger: silentLogger,
    });
    await outbox.migrate();
    await outbox.close();
    const t = tableNames(prefix, db.outboxOptions.schema);
    await client.query(`
      INSERT INTO ${t.events} (uuid, name, payload, occurred_at)
      SELECT gen_random_uuid(), 'a.Happened', jsonb_build_object('n', g), now()
      FROM generate_series(1, ${HISTORY + DELIVERED + OWED}) g;
      INSERT INTO ${t.deliveries} (event_id, receiver_key, status, max_attempts, available_at, succeeded_at)
      SELECT id, 'r.one', CASE WHEN id <= ${HISTORY} THEN 'succeeded' ELSE 'pending' END, 5, now(),
             CASE WHEN id <= ${HISTORY} THEN now() END
      FROM ${t.events};
      UPDATE ${t.deliveries} SET status = 'claimed', claimed_by = 'w0', claimed_at = now()
      WHERE event_id > ${HISTORY} AND event_id <= ${HISTORY + DELIVERED};
      UPDATE ${t.deliveries} SET status = 'succeeded', succeeded_at = now(), completed_at = now()
      WHERE status = 'claimed';`);
    if (analyze) await client.query(`ANALYZE ${t.deliveries}; ANALYZE ${t.events}`);
    const claim = postgresStatements(t, undefined).claim;
    const now = new Date(Date.now() + 1000);
    await client.query('BEGIN');
    try {
      const { rows } = await client.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${claim}`,
        ['w', new Date(), new Date(Date.now() + 60_000), now, false, BATCH, [], null],
      );
      const plan = rows[0]?.['QUERY PLAN'][0]?.Plan;
      if (!plan) throw new Error('no plan');
      const owed = [...nodes(plan)].find((n) => n['Index Name'] === `${prefix}deliveries_queue`);
      const { rows: taken } = await client.query<{ n: number; first: string }>(
        `SELECT count(*)::int AS n, min(event_id)::text AS first FROM ${t.deliveries} WHERE claimed_by = 'w'`,
      );
      return { owed, taken: taken[0] };
    } finally {
      await client.query('ROLLBACK');
    }
  }

  it('with current statistics, reads a batch of the owed index in order, whatever the dead rows left behind', async () => {
    const { owed, taken } = await claimAfterTraffic('fresh_', true);
    expect(owed?.['Node Type']).toBe('Index Scan');
    // The live entries it returned: about a batch (the scan stops at the LIMIT), not the
    // 20,000 owed rows nor the 10,000 dead entries of the 5,000 events delivered since.
    expect(owed?.['Actual Rows'] ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(2 * BATCH);
    expect(taken).toEqual({ n: BATCH, first: String(HISTORY + DELIVERED + 1) });
  });

  it("with the empty table's statistics never refreshed, reads every owed index entry, dead ones included", async () => {
    const { owed, taken } = await claimAfterTraffic('stale_', false);
    // A bitmap scan of the whole partial index, sorted afterwards: its entries are the
    // owed rows and the dead versions of every row delivered since the last VACUUM (a
    // bitmap scan never marks an index entry dead, so nothing but VACUUM removes them).
    expect(owed?.['Node Type']).toBe('Bitmap Index Scan');
    expect(owed?.['Actual Rows'] ?? 0).toBeGreaterThanOrEqual(OWED + DELIVERED);
    // The same rows are claimed either way: only the cost differs.
    expect(taken).toEqual({ n: BATCH, first: String(HISTORY + DELIVERED + 1) });
  });
});
