import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import { mariadbDialect } from '../../src/storage/mariadb/dialect.js';
import { mariadbRunner } from '../../src/storage/mariadb/runner.js';
import { mariadbClaim } from '../../src/storage/mariadb/statements.js';
import type { ClaimShape } from '../../src/storage/sql/claim-filter.js';
import { tableNames } from '../../src/storage/tables.js';
import { mariadbTestDatabase, type TestDatabase } from '../../testing/databases.js';

const config = defineOutbox({
  events: { 'a.Happened': event({ schema: z.object({ n: z.number() }) }) },
  receivers: { 'r.one': receiver('a.Happened', { handle: () => {} }) },
});

/** The tables a plan names, with the index it reads each by and how (`ALL` is a full scan). */
interface Access {
  readonly table: string;
  readonly key: string | undefined;
  readonly access: string;
}

/** Every table access in an `EXPLAIN FORMAT=JSON` document, nested subqueries included. */
function accesses(node: unknown, found: Access[] = []): Access[] {
  if (Array.isArray(node)) for (const n of node) accesses(n, found);
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if (o.table && typeof o.table === 'object') {
      const t = o.table as Record<string, unknown>;
      found.push({
        table: String(t.table_name),
        key: t.key === undefined ? undefined : String(t.key),
        access: String(t.access_type),
      });
    }
    for (const v of Object.values(o)) accesses(v, found);
  }
  return found;
}

/**
 * The claim's plan on MariaDB, on a large table: its first step (the candidates, locked
 * `FOR UPDATE SKIP LOCKED`) reads the owed rows through deliveries_queue — the index led by
 * the stored phase, MariaDB's stand-in for PostgreSQL's partial index — in event order,
 * never the delivered history, and the ordering check probes deliveries_ordering.
 */
describe.skipIf(!inject('mariadbAvailable'))('the claim plan on a large table [mariadb]', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await mariadbTestDatabase();
  });
  afterAll(() => db.cleanup());

  /** 50,000 events, 40,000 of them already delivered, seeded in SQL for speed (seq_1_to_50000: MariaDB's sequence engine). */
  async function seed(run: ReturnType<typeof mariadbRunner>, prefix: string): Promise<void> {
    await run.run(
      `INSERT INTO "${prefix}events" (uuid, name, payload, occurred_at, recorded_at)
       SELECT UUID(), 'a.Happened', JSON_OBJECT('n', seq), 0, 0 FROM seq_1_to_50000`,
      [],
    );
    await run.run(
      `INSERT INTO "${prefix}deliveries" (event_id, receiver_key, status, max_attempts, available_at, ordering_key)
       SELECT id, 'r.one', CASE WHEN id <= 40000 THEN 'succeeded' ELSE 'pending' END, 5, 0,
              CASE WHEN id % 3 = 0 THEN CONCAT('k', id % 100) END
       FROM "${prefix}events"`,
      [],
    );
  }

  /** Every claim shape's plan reads c by deliveries_queue and p by deliveries_ordering. */
  async function expectPlans(run: ReturnType<typeof mariadbRunner>, prefix: string): Promise<void> {
    const t = tableNames(prefix, undefined);
    const none: ClaimShape = {
      receiverKeys: false,
      excludeReceiverKeys: false,
      topics: false,
      excludeTopics: false,
      onlyEvents: false,
    };
    const now = Date.now();
    const base = ['w', now, now + 60_000, now + 1000, 0, 500, '[]', null];
    for (const [shape, filters] of [
      [undefined, []],
      [{ ...none, excludeReceiverKeys: true }, ['["r.other"]']],
      [{ ...none, receiverKeys: true }, ['["r.one"]']],
      [{ ...none, topics: true }, ['["a.Happened"]', '[]']],
    ] as const) {
      const [row] = await run.select<Record<string, string>>(
        `EXPLAIN FORMAT=JSON ${mariadbClaim(t, mariadbDialect, shape)}`,
        [...base, ...filters],
      );
      const plan = accesses(JSON.parse(String(Object.values(row ?? {})[0])));
      const deliveries = plan.filter((a) => a.table === 'c' || a.table === 'p');
      expect(deliveries.find((a) => a.table === 'c')?.key).toBe(`${prefix}deliveries_queue`);
      expect(deliveries.find((a) => a.table === 'p')?.key).toBe(`${prefix}deliveries_ordering`);
      expect(
        deliveries.filter((a) => a.access === 'ALL'),
        JSON.stringify({ shape, plan }),
      ).toEqual([]);
    }
  }

  it('reads the owed rows by deliveries_queue and the ordering check by deliveries_ordering, no full scan', async () => {
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      wakeup: null,
      logger: silentLogger,
    });
    await outbox.migrate();
    const run = mariadbRunner(db.sequelize);
    await seed(run, 'outbox_');
    await run.run('ANALYZE TABLE "outbox_events", "outbox_deliveries"', []);
    await expectPlans(run, 'outbox_');
  });

  // A new outbox's statistics are taken while its tables are empty; with them MariaDB chose
  // deliveries_succeeded for the ordering check (about 2,500 rows read per candidate: a
  // 5,000-event claim took 0.32 s, not 0.02 s), so the check names its index.
  it('keeps the ordering check on deliveries_ordering with statistics taken on the empty tables', async () => {
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      tablePrefix: 'fresh_',
      wakeup: null,
      logger: silentLogger,
    });
    await outbox.migrate();
    const run = mariadbRunner(db.sequelize);
    await run.run('ANALYZE TABLE "fresh_events", "fresh_deliveries"', []);
    await seed(run, 'fresh_');
    await expectPlans(run, 'fresh_');
  });
});
