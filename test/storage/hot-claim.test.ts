/**
 * Migration 4's point (src/storage/sql/phase.ts, docs/storage.md): on PostgreSQL a claim, a
 * lease renewal and a hand-back change no column an index names, so each is a HOT update —
 * the row's new version on its own page, no index entry written. A verdict changes the
 * phase, and is an ordinary update.
 */
import { QueryTypes } from 'sequelize';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, receiver } from '../../src/index.js';
import { postgresDialect } from '../../src/storage/postgres/dialect.js';
import { postgresStatements } from '../../src/storage/postgres.js';
import { sharedStatements } from '../../src/storage/sql/statements.js';
import { tableNames } from '../../src/storage/tables.js';
import { postgresTestSchema, type TestDatabase } from '../../testing/databases.js';
import { openOutbox } from '../relay/support.js';

const config = defineOutbox({
  events: { 'a.Happened': event({ schema: z.object({ n: z.number() }) }) },
  receivers: { 'r.one': receiver('a.Happened', { deliver: async () => {} }) },
});

describe.skipIf(!inject('pgAvailable'))('the claim is a HOT update [postgres]', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await postgresTestSchema();
  });
  afterAll(() => db.cleanup());

  it('a claim, a renewal and a hand-back write no index entry; the verdict does', async () => {
    const prefix = 'hot_';
    const outbox = await openOutbox(db, config, { tablePrefix: prefix });
    // Ten keys, so one claim takes ten rows (one event of each key).
    for (let n = 0; n < 50; n++)
      await outbox.fire('a.Happened', { n }, { orderingKey: `k${n % 10}` });
    await outbox.close();
    const t = tableNames(prefix, db.outboxOptions.schema);
    const pg = postgresStatements(t, undefined);
    const shared = sharedStatements(t, postgresDialect);
    /**
     * Run `sql` in a transaction of its own: its rows, and the updates of the table it made
     * (all, HOT). The `xact` counters hold what the connection has not yet flushed to the
     * statistics, earlier transactions included: the difference is this statement's.
     */
    const run = (sql: string, bind: unknown[]) =>
      db.sequelize.transaction(async (transaction) => {
        const counters = async () =>
          (
            await db.sequelize.query<{ all: number; hot: number }>(
              `SELECT pg_stat_get_xact_tuples_updated($1::regclass)::int AS all,
                      pg_stat_get_xact_tuples_hot_updated($1::regclass)::int AS hot`,
              { bind: [t.deliveries], type: QueryTypes.SELECT, transaction },
            )
          )[0] ?? { all: 0, hot: 0 };
        const before = await counters();
        const rows = await db.sequelize.query<{ id: string }>(sql, {
          bind,
          type: QueryTypes.SELECT,
          transaction,
        });
        const after = await counters();
        return { rows, updates: { all: after.all - before.all, hot: after.hot - before.hot } };
      });
    const claimedAt = new Date();
    const claimBind = (worker: string, at: Date) => [
      worker,
      at,
      new Date(Date.now() + 60_000),
      new Date(Date.now() + 1000),
      false,
      50,
      [],
      null,
    ];
    const claimed = await run(pg.claim, claimBind('w', claimedAt));
    expect(claimed.rows).toHaveLength(10);
    expect(claimed.updates).toEqual({ all: 10, hot: 10 });
    const ids = claimed.rows.map((r) => r.id);
    const renew = [
      `${shared.renewLeases} RETURNING id`,
      ['w', claimedAt, new Date(Date.now() + 120_000), ids],
    ] as const;
    expect((await run(renew[0], [...renew[1]])).updates).toEqual({ all: 10, hot: 10 });
    const release = await run(`${shared.release} RETURNING id`, ['w', claimedAt, new Date(), ids]);
    expect(release.updates).toEqual({ all: 10, hot: 10 });
    // Claimed again, then delivered: the verdict moves the row out of the queue.
    const again = new Date(claimedAt.getTime() + 1);
    const second = await run(pg.claim, claimBind('w2', again));
    expect(second.updates).toEqual({ all: 10, hot: 10 });
    const verdict = await run(`${pg.recordSucceeded} RETURNING id`, [
      'w2',
      again,
      second.rows.map((r) => r.id),
      new Date(),
    ]);
    expect(verdict.rows).toHaveLength(10);
    expect(verdict.updates).toEqual({ all: 10, hot: 0 });
  });
});
