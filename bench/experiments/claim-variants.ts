/**
 * EXPERIMENT (issue 7, the claim): where the PostgreSQL claim's time goes in the low-rate
 * (latency) case, one row owed at a time, measured by taking the claim apart.
 *
 * One schema made by `migrate()`, a history of `--history` settled rows (default 50,000,
 * one event and one succeeded delivery each, some with an ordering key) and a few rows owed
 * but not claimable (failed rows waiting out a backoff; a key held back behind a dead
 * letter), VACUUM (ANALYZE) + CHECKPOINT. Then `--rounds` rounds; in each round every
 * variant in turn (the order rotates by one per round, so load hits them alike):
 * insert one owed event + delivery and COMMIT (as `fire()` writes them, not timed), run
 * the variant as a named prepared statement on one node-postgres connection, outside any
 * transaction (timed: the statement's round trip, its commit included), then settle the
 * row by primary key (not timed). p50/p90/p99 per variant; then, per variant,
 * `EXPLAIN (ANALYZE, BUFFERS)` of its generic plan on the same table and
 * `pg_prepared_statements`' count of generic and custom plans the loop used.
 *
 * Variants that keep every semantic of the claim are marked `same: true` (src/'s text
 * through the store, the pool or a connection of its own; graphile-worker's CTE shape; the
 * event joined in the UPDATE); the others take one part away to price it (`no-join`,
 * `no-held-back`, `no-order`, `hot-update`, `sync-commit`, `ctid`) or are floors
 * (`select-1`, `owed-only`, `select-only`, `lock-only`). graphile-worker's own `get_job`
 * runs in the same rounds on its own tables (needs `npm ci --prefix bench/peers`; leave it
 * out with `--no-graphile`). Also printed: the client CPU (user + system) per statement.
 * Results and what they say: bench/README.md, "Measured here (issue 7, the claim)".
 *
 *   npx tsx bench/experiments/claim-variants.ts [--rounds 3000] [--history 50000]
 *     [--gap-ms 4] [--keyed] [--only a,b] [--no-graphile]
 *
 * `--gap-ms`: idle time before each timed statement (the relay's connection sleeps between
 * events at a low rate); `--keyed`: every inserted event has an ordering key (of 100).
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createOutbox, silentLogger } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { postgresDialect as d } from '../../src/storage/postgres/dialect.js';
import { runPooled } from '../../src/storage/postgres/pg-client.js';
import { postgresClaim } from '../../src/storage/postgres/statements.js';
import { EVENT_COLUMNS } from '../../src/storage/rows.js';
import {
  CLAIMED_COLUMNS,
  claimCandidates,
  notHeldBack,
  ready,
} from '../../src/storage/sql/conditions.js';
import { type TableNames, tableNames } from '../../src/storage/tables.js';
import {
  benchConfig,
  newSchemaName,
  openSequelize,
  PG_URL,
  quantile,
  round,
  sleep,
} from '../common.js';
import { loadGraphile, quietGraphileLogger } from '../peers/load.js';
import { dropSchemaPg, settle } from '../pg.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3000' },
    history: { type: 'string', default: '50000' },
    only: { type: 'string' },
    keyed: { type: 'boolean', default: false },
    'gap-ms': { type: 'string', default: '0' },
    'no-graphile': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);
const HISTORY = Number(args.history);
/** Idle time between the insert and the claim (the relay's backend sleeps between events). */
const GAP_MS = Number(args['gap-ms']);

const epochMs = (column: string): string => `round(extract(epoch FROM ${column}) * 1000)::float8`;
const SELECT_LIST = `c.id::text AS id, c.receiver_key, c.target, c.attempts, c.max_attempts,
             ${epochMs('c.due_at')} AS due_at, ${EVENT_COLUMNS('e', epochMs)}`;
const ASYNC = `(SELECT set_config('synchronous_commit', 'off', true)) = 'off'`;

interface Variant {
  readonly name: string;
  /** Keeps every semantic of the claim (could replace it). */
  readonly same: boolean;
  readonly text: string;
  /** Run through the store (`store.claim()`: Sequelize's pool, the row mapping), not here. */
  readonly viaStore?: true;
  /** Run through `runPooled` on Sequelize's pool (the store's path without its row mapping). */
  readonly viaPool?: true;
  /**
   * Run on a second connection that runs nothing but this claim, as the relay's claim
   * connection (its backend idle between claims), not on the one that inserts and settles.
   */
  readonly ownConnection?: true;
  /**
   * graphile-worker 0.18's own `get_job` (batch 1, its default queue strategy) on its own
   * tables, each round: `add_job` and COMMIT, the get_job (timed), then its delete.
   * `async` also commits it as our claim does (`synchronous_commit` off for the statement).
   */
  readonly graphile?: 'sync' | 'async';
}

/** The candidates of src/, or with a part taken away. */
function candidates(t: TableNames, o: { heldBack?: boolean } = {}): string {
  if (o.heldBack !== false) return claimCandidates(t, d);
  return claimCandidates(t, d).replace(` AND ${notHeldBack(t, d, 'c')}`, '');
}

function variants(t: TableNames): Variant[] {
  const update = (cands: string) => `
      UPDATE ${t.deliveries} d
      SET status = 'claimed', claimed_by = $1, claimed_at = $2, lease_until = $3
      WHERE d.id = ANY(ARRAY(
          ${cands}
          FOR UPDATE SKIP LOCKED
      ))`;
  const joined = (cands: string, asyncCommit = true) => `
      WITH claimed AS (${update(cands)}
        RETURNING ${CLAIMED_COLUMNS('d')}
      )
      SELECT ${SELECT_LIST}
      FROM claimed c JOIN ${t.events} e ON e.id = c.event_id
      ${asyncCommit ? `WHERE ${ASYNC}` : ''}
      ORDER BY c.event_id, c.id`;
  // All eight parameters must be typed and used in every variant (the bind is the same).
  const useAll = `$1::text IS NOT NULL AND $2::timestamptz IS NOT NULL AND $3::timestamptz IS NOT NULL`;
  return [
    { name: 'current', same: true, text: postgresClaim(t) },
    { name: 'store', same: true, text: postgresClaim(t), viaStore: true },
    { name: 'pool-raw', same: true, text: postgresClaim(t), viaPool: true },
    { name: 'current-own-conn', same: true, text: postgresClaim(t), ownConnection: true },
    { name: 'sync-commit', same: false, text: joined(candidates(t), false) },
    {
      name: 'no-join',
      same: false,
      text: `${update(candidates(t))} AND ${ASYNC} RETURNING ${CLAIMED_COLUMNS('d')}`,
    },
    {
      // The status left as it was: no indexed column changes, so the UPDATE can be HOT (no
      // new entries in the pkey, owed, event indexes). Prices the index maintenance.
      name: 'hot-update',
      same: false,
      text: joined(candidates(t)).replace(`SET status = 'claimed', claimed_by`, 'SET claimed_by'),
    },
    { name: 'no-held-back', same: false, text: joined(candidates(t, { heldBack: false })) },
    {
      // graphile-worker's shape: the locked candidates in a CTE joined to the UPDATE.
      name: 'cte-join',
      same: true,
      text: `
      WITH j AS (
          ${candidates(t)}
          FOR UPDATE SKIP LOCKED
      ), claimed AS (
        UPDATE ${t.deliveries} d
        SET status = 'claimed', claimed_by = $1, claimed_at = $2, lease_until = $3
        FROM j WHERE d.id = j.id
        RETURNING ${CLAIMED_COLUMNS('d')}
      )
      SELECT ${SELECT_LIST}
      FROM claimed c JOIN ${t.events} e ON e.id = c.event_id
      WHERE ${ASYNC}
      ORDER BY c.event_id, c.id`,
    },
    {
      // The event joined in the UPDATE itself (UPDATE … FROM events), no outer join.
      name: 'update-from-events',
      same: true,
      text: `
      WITH claimed AS (
        UPDATE ${t.deliveries} c
        SET status = 'claimed', claimed_by = $1, claimed_at = $2, lease_until = $3
        FROM ${t.events} e
        WHERE c.id = ANY(ARRAY(
            ${candidates(t)}
            FOR UPDATE SKIP LOCKED
        )) AND e.id = c.event_id AND ${ASYNC}
        RETURNING c.event_id AS event_sequence_order, ${SELECT_LIST}
      )
      SELECT * FROM claimed ORDER BY event_sequence_order, id::bigint`,
    },
    {
      // The rows found again by their tuple ids (a TID scan) instead of the primary key.
      name: 'ctid',
      same: false,
      text: postgresClaim(t)
        .replace('WHERE d.id = ANY(ARRAY(', 'WHERE d.ctid = ANY(ARRAY(')
        .replace(/SELECT c\.id FROM/, 'SELECT c.ctid FROM'),
    },
    {
      // No final ORDER BY (prices the sort; a batch's order would be lost).
      name: 'no-order',
      same: false,
      text: postgresClaim(t).replace(/ORDER BY c\.event_id, c\.id\s*$/, ''),
    },
    {
      name: 'lock-only',
      same: false,
      text: `${withCondition(candidates(t), useAll)} FOR UPDATE SKIP LOCKED`,
    },
    { name: 'select-only', same: false, text: withCondition(candidates(t), useAll) },
    {
      name: 'select-1',
      same: false,
      text: `SELECT 1 WHERE ${useAll} AND $4::timestamptz IS NOT NULL AND $5::boolean IS NOT NULL
             AND $6::int > 0 AND $7::bigint[] IS NOT NULL AND $8::bigint[] IS NULL`,
    },
    { name: 'owed-only', same: false, text: ownedOnly(t, useAll) },
    { name: 'graphile-get-job', same: false, text: '', graphile: 'sync' },
    { name: 'graphile-get-job-async', same: false, text: '', graphile: 'async' },
  ];
}

/**
 * graphile-worker 0.18.0's get_job for a batch of 1 (src/sql/getJobs.ts, `constructQuery`
 * with strategy 2, no flags, the database's clock), copied because it is not exported;
 * `async` adds our claim's statement-local `synchronous_commit = off`.
 */
function graphileGetJob(gw: string, async: boolean): string {
  return `
with j as (
  select jobs.job_queue_id, jobs.priority, jobs.run_at, jobs.id
    from ${gw}._private_jobs as jobs
    where jobs.is_available = true
    and run_at <= now()
    and task_id = any($2::int[])
    and (
      jobs.job_queue_id is null
      or
      jobs.job_queue_id in (
        select id
        from ${gw}._private_job_queues as job_queues
        where job_queues.is_available = true
        for update
        skip locked
      )
    )
    order by priority asc, run_at asc
    limit 1
    for update
    skip locked
),
q as (
  update ${gw}._private_job_queues as job_queues
    set
      locked_by = $1::text,
      locked_at = now()
    from j
    where job_queues.id = j.job_queue_id
)
  update ${gw}._private_jobs as jobs
    set
      attempts = jobs.attempts + 1,
      locked_by = $1::text,
      locked_at = now()
    from j
    where jobs.id = j.id${async ? ` and ${ASYNC}` : ''}
    returning *`;
}

/** The candidates with one more condition (before their ORDER BY). */
function withCondition(cands: string, condition: string): string {
  return cands.replace(/\n\s*ORDER BY/, ` AND ${condition}\n          ORDER BY`);
}

/** The owed scan alone: the partial index, the owed condition, no exclusions, no lock. */
function ownedOnly(t: TableNames, useAll: string): string {
  return `SELECT c.id FROM ${t.deliveries} c
          WHERE ${ready('c', '$4', '$5::boolean')} AND ${useAll}
            AND $6::int > 0 AND $7::bigint[] IS NOT NULL AND $8::bigint[] IS NULL
          ORDER BY c.event_id, c.id LIMIT $6`;
}

async function main(): Promise<void> {
  const schema = newSchemaName();
  const sequelize = openSequelize(2);
  const t = tableNames('outbox_', schema);
  let outboxToClose: { close(): Promise<void> } | undefined;
  const client = new pg.Client({ connectionString: PG_URL, application_name: 'claim-variants' });
  await client.connect();
  const own = new pg.Client({ connectionString: PG_URL, application_name: 'claim-variants-own' });
  await own.connect();
  try {
    const outbox = createOutbox(benchConfig('noop-handler'), {
      sequelize,
      schema,
      wakeup: null,
      logger: silentLogger,
    });
    await outbox.migrate();
    outboxToClose = outbox;
    const { store } = runtimeOf(outbox);
    await seed(client, t);
    const gwSchema = `${schema}_gw`;
    const gw = `"${gwSchema}"`;
    let taskIds: number[] = [];
    if (!args['no-graphile']) {
      const graphile = await loadGraphile();
      const utils = await graphile.makeWorkerUtils({
        connectionString: PG_URL,
        schema: gwSchema,
        logger: quietGraphileLogger(graphile),
      });
      try {
        await utils.migrate();
        await utils.addJobs([{ identifier: 'ping', payload: { n: 0 } }]);
      } finally {
        await utils.release();
      }
      await client.query(`DELETE FROM ${gw}._private_jobs`);
      const { rows } = await client.query<{ id: number }>(
        `SELECT id FROM ${gw}._private_tasks WHERE identifier = 'ping'`,
      );
      taskIds = rows.map((r) => r.id);
      await settle(gwSchema);
    }
    await settle(schema);

    let all = variants(t).filter((v) => !v.graphile || !args['no-graphile']);
    if (args.only) {
      const only = new Set(args.only.split(','));
      all = all.filter((v) => only.has(v.name) || v.name === 'current');
    }
    const times = new Map<string, number[]>(all.map((v) => [v.name, []]));
    const claimedRows = new Map<string, number>(all.map((v) => [v.name, 0]));
    /** Client CPU (user + system, µs) spent while each variant's statement was out. */
    const cpuUs = new Map<string, number>();
    const worker = 'w-claim-variants';
    let n = 0;
    const insertOne = async (): Promise<string> => {
      n += 1;
      const { rows } = await client.query<{ id: string }>({
        name: 'insert_one',
        text: `WITH e AS (
            INSERT INTO ${t.events} (uuid, name, version, payload, headers, occurred_at, recorded_at, ordering_key)
            VALUES (gen_random_uuid(), 'bench.Ping', 1, $1::jsonb, '{}'::jsonb, now(), now(), $2::text)
            RETURNING id, ordering_key
          )
          INSERT INTO ${t.deliveries} (event_id, receiver_key, target, max_attempts, available_at, ordering_key)
          SELECT e.id, 'bench.noop', '', 25, now(), e.ordering_key FROM e RETURNING id::text AS id`,
        values: [JSON.stringify({ n, note: 'owed' }), args.keyed ? `k${n % 100}` : null],
      });
      return rows[0].id;
    };
    const settleRow = (id: string) =>
      client.query({
        name: 'settle_one',
        text: `UPDATE ${t.deliveries} SET status = 'succeeded', attempts = attempts + 1,
               completed_at = now(), succeeded_at = now(), claimed_by = NULL, claimed_at = NULL,
               lease_until = NULL WHERE id = $1::bigint`,
        values: [id],
      });
    for (let r = 0; r < ROUNDS; r++) {
      for (let i = 0; i < all.length; i++) {
        const v = all[(i + r) % all.length];
        if (v.graphile) {
          await client.query({
            name: 'gw_add',
            text: `SELECT ${gw}.add_job('ping', $1::json)`,
            values: [JSON.stringify({ n: r, note: 'owed' })],
          });
          if (GAP_MS > 0) await sleep(GAP_MS);
          const cpu = process.cpuUsage();
          const started = performance.now();
          const got = await client.query<{ id: string }>({
            name: `v_${v.name}`,
            text: graphileGetJob(gw, v.graphile === 'async'),
            values: [worker, taskIds],
          });
          const ms = performance.now() - started;
          const used = process.cpuUsage(cpu);
          if (r >= 10) {
            times.get(v.name)?.push(ms);
            cpuUs.set(v.name, (cpuUs.get(v.name) ?? 0) + used.user + used.system);
          }
          claimedRows.set(v.name, (claimedRows.get(v.name) ?? 0) + (got.rowCount ?? 0));
          await client.query({
            name: 'gw_complete',
            text: `DELETE FROM ${gw}._private_jobs WHERE id = $1::bigint`,
            values: [got.rows[0]?.id ?? '0'],
          });
          continue;
        }
        const id = await insertOne();
        // A millisecond ahead of the insert's now(): a Date has no microseconds.
        const now = new Date(Date.now() + 1);
        const values = [worker, now, new Date(now.getTime() + 60_000), now, false, 100, [], null];
        if (GAP_MS > 0) await sleep(GAP_MS);
        const cpu = process.cpuUsage();
        const started = performance.now();
        const rowCount = v.viaStore
          ? (
              await store.claim({
                token: { workerId: worker, claimedAt: now },
                now,
                leaseUntil: new Date(now.getTime() + 60_000),
                limit: 100,
              })
            ).length
          : v.viaPool
            ? ((await runPooled(sequelize, { name: `v_${v.name}`, text: v.text, values }))
                .rowCount ?? 0)
            : ((
                await (v.ownConnection ? own : client).query({
                  name: `v_${v.name}`,
                  text: v.text,
                  values,
                })
              ).rowCount ?? 0);
        const ms = performance.now() - started;
        const used = process.cpuUsage(cpu);
        if (r >= 10) {
          times.get(v.name)?.push(ms); // the first rounds warm the plan caches
          cpuUs.set(v.name, (cpuUs.get(v.name) ?? 0) + used.user + used.system);
        }
        claimedRows.set(v.name, (claimedRows.get(v.name) ?? 0) + rowCount);
        await settleRow(id);
      }
    }
    const plans = await client.query<{ name: string; generic_plans: string; custom_plans: string }>(
      `SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'v\\_%'`,
    );
    const planCounts = new Map(plans.rows.map((p) => [p.name.slice(2), p]));
    const table: Record<string, unknown>[] = [];
    const base = quantile(
      [...(times.get('current') ?? [])].sort((a, b) => a - b),
      0.5,
    );
    for (const v of all) {
      const sorted = [...(times.get(v.name) ?? [])].sort((a, b) => a - b);
      const explain =
        v.viaStore || v.viaPool || v.ownConnection || v.graphile
          ? {}
          : await explainOf(client, t, v, insertOne, settleRow);
      const p = planCounts.get(v.name);
      const row = {
        variant: v.name,
        same: v.same,
        p50: round(quantile(sorted, 0.5)),
        p90: round(quantile(sorted, 0.9)),
        p99: round(quantile(sorted, 0.99)),
        vsCurrentP50: round(quantile(sorted, 0.5) / base),
        rowsPerCall: round((claimedRows.get(v.name) ?? 0) / ROUNDS, 2),
        clientCpuUs: round((cpuUs.get(v.name) ?? 0) / Math.max(1, ROUNDS - 10), 1),
        genericPlans: Number(p?.generic_plans ?? 0),
        customPlans: Number(p?.custom_plans ?? 0),
        ...explain,
      };
      table.push(row);
      process.stdout.write(
        `${JSON.stringify({ bench: 'claim-variants', history: HISTORY, rounds: ROUNDS, keyed: args.keyed, ...row })}\n`,
      );
    }
    process.stderr.write(
      `\nclaim variants, ${ROUNDS} rounds, history ${HISTORY}, ms (client round trip):\n` +
        '| variant | same | rows/call | client CPU µs | p50 | p90 | p99 | vs current p50 | exec ms | plan ms | buffers hit | generic/custom |\n' +
        '|---|---|---|---|---|---|---|---|---|---|---|---|\n' +
        table
          .map(
            (r) =>
              `| ${r.variant} | ${r.same ? 'yes' : ''} | ${r.rowsPerCall} | ${r.clientCpuUs} | ${r.p50} | ${r.p90} | ${r.p99} | ${r.vsCurrentP50} | ${r.executionMs} | ${r.planningMs} | ${r.sharedHit} | ${r.genericPlans}/${r.customPlans} |`,
          )
          .join('\n') +
        '\n',
    );
  } finally {
    await client.end();
    await own.end();
    await outboxToClose?.close();
    await sequelize.close();
    await dropSchemaPg(schema);
    await dropSchemaPg(`${schema}_gw`);
  }
}

/** History: settled rows, some keyed; and owed rows that no claim may take now. */
async function seed(client: pg.Client, t: TableNames): Promise<void> {
  await client.query(`
    INSERT INTO ${t.events} (uuid, name, payload, occurred_at, recorded_at, ordering_key)
    SELECT gen_random_uuid(), 'bench.Ping', jsonb_build_object('n', g, 'note', 'history'),
           now() - interval '1 hour', now() - interval '1 hour',
           CASE WHEN g % 3 = 0 THEN 'k' || (g % 100) END
    FROM generate_series(1, ${HISTORY}) g`);
  await client.query(`
    INSERT INTO ${t.deliveries} (event_id, receiver_key, status, attempts, max_attempts, available_at,
                                 completed_at, succeeded_at, ordering_key)
    SELECT id, 'bench.noop', 'succeeded', 1, 25, recorded_at, recorded_at, recorded_at, ordering_key
    FROM ${t.events}`);
  // Owed but not claimable: five failed rows in backoff, and a key held back behind a
  // dead letter (the dead row, then three pending rows of the same key).
  await client.query(`
    WITH e AS (
      INSERT INTO ${t.events} (uuid, name, payload, occurred_at, ordering_key)
      SELECT gen_random_uuid(), 'bench.Ping', jsonb_build_object('n', -g, 'note', 'stuck'), now(),
             CASE WHEN g > 5 THEN 'stuck' END
      FROM generate_series(1, 9) g RETURNING id, ordering_key, (payload->>'n')::int AS n
    )
    INSERT INTO ${t.deliveries} (event_id, receiver_key, status, attempts, max_attempts, available_at, ordering_key)
    SELECT id, 'bench.noop',
           CASE WHEN n >= -5 THEN 'failed' WHEN n = -6 THEN 'dead' ELSE 'pending' END,
           1, 25, CASE WHEN n >= -5 THEN now() + interval '1 day' ELSE now() END, ordering_key
    FROM e`);
}

/** EXPLAIN (ANALYZE, BUFFERS) of a variant's generic plan, on a fresh owed row, rolled back. */
async function explainOf(
  client: pg.Client,
  t: TableNames,
  v: Variant,
  insertOne: () => Promise<string>,
  settleRow: (id: string) => Promise<unknown>,
): Promise<Record<string, unknown>> {
  void t;
  const id = await insertOne();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
    await client.query(`PREPARE x_explain AS ${v.text}`);
    const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE x_explain('w-explain', now(), now() + interval '1 minute', now(), false, 100, '{}', NULL)`,
    );
    const plan = (rows[0]['QUERY PLAN'] as Record<string, unknown>[])[0] as {
      'Planning Time': number;
      'Execution Time': number;
      Plan: { 'Shared Hit Blocks'?: number };
      Planning?: { 'Shared Hit Blocks'?: number };
    };
    if (process.env.CLAIM_VARIANTS_PLANS) {
      const text = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, BUFFERS) EXECUTE x_explain('w-explain2', now(), now() + interval '1 minute', now(), false, 100, '{}', NULL)`,
      );
      process.stderr.write(
        `\n--- ${v.name}\n${text.rows.map((r) => r['QUERY PLAN']).join('\n')}\n`,
      );
    }
    return {
      executionMs: round(plan['Execution Time']),
      planningMs: round(plan['Planning Time']),
      sharedHit: plan.Plan['Shared Hit Blocks'] ?? 0,
    };
  } finally {
    await client.query('ROLLBACK');
    await client.query('DEALLOCATE x_explain').catch(() => {});
    await settleRow(id);
  }
}

await main();
