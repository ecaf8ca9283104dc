/**
 * Plain node-postgres for the benchmark: the bare SQL loops and producers connect with it
 * (no Sequelize in their way), and every figure settles the database through it right
 * before its timed part: `VACUUM (ANALYZE)` of each table of the run's schema, then a
 * `CHECKPOINT`, so no figure pays for the previous one's dirty pages, dead rows or a
 * checkpoint falling in its timed window, and the planner has fresh statistics.
 */
import pg from 'pg';
import { note, PG_URL } from './common.js';

export type PgClient = pg.Client;

/** node-postgres' pool, from the root's `pg` (the peers' worker hands one to graphile-worker). */
export const PgPool = pg.Pool;

/** One connection to the benchmark database, over TCP like every client of the bench. */
export async function connectPg(applicationName = 'outboxkit-bench'): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: PG_URL, application_name: applicationName });
  await client.connect();
  return client;
}

/**
 * `VACUUM (ANALYZE)` every table in `schema`, then `CHECKPOINT`; returns the seconds it took.
 * Run after seeding and before the clock starts, in every figure, for every system.
 */
export async function settle(schema: string): Promise<number> {
  const started = performance.now();
  const client = await connectPg('outboxkit-bench-settle');
  try {
    const { rows } = await client.query<{ t: string }>(
      `SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE schemaname = $1`,
      [schema],
    );
    for (const { t } of rows) await client.query(`VACUUM (ANALYZE) ${t}`);
    await client.query('CHECKPOINT');
  } finally {
    await client.end();
  }
  return (performance.now() - started) / 1000;
}

/** Drop a schema and everything in it; never throws (cleanup must always finish). */
export async function dropSchemaPg(schema: string): Promise<void> {
  let client: pg.Client | undefined;
  try {
    client = await connectPg('outboxkit-bench-cleanup');
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } catch (error) {
    note(`bench: could not drop schema ${schema}: ${String(error)}`);
  } finally {
    await client?.end().catch(() => {});
  }
}
