/**
 * Issue 9's instrumentation of the claim-prune run (`--claim-prune-explain N`): what the claim
 * reads, counted in buffers rather than milliseconds, so the figures hold on a noisy machine.
 *
 * Every N events claimed (and once at the end), on a connection of its own:
 * - the relay's claim statement (src/'s own text, `postgresStatements(…).claim`, bound as the
 *   relay binds it, a batch of 100) under `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` in a
 *   transaction that is rolled back: its shared buffers hit/read in all, those of the scan of
 *   the owed rows (`deliveries_owed`) alone, the rows that scan returned, and the plan's shape;
 * - `pg_stat_user_tables` of the deliveries and events tables: live and dead tuples, updates
 *   (HOT among them), deletes, the autovacuums and autoanalyzes so far and the last of each;
 * - a vacuum in progress on the deliveries table (`pg_stat_progress_vacuum`: its phase, heap
 *   blocks scanned of total, index passes);
 * - the oldest snapshot any backend holds (`age(backend_xmin)`, in transactions), which is
 *   what keeps a dead tuple from being removed or its index entry from being killed;
 * - the size of each deliveries index and, with the `pgstattuple` extension (created in
 *   `public` if the server has it; skipped if not), `pgstatindex` of `deliveries_owed`: leaf
 *   pages, empty (deleted) pages, average leaf density.
 * At the end also `pgstattuple` of the deliveries table (dead tuples and free space), which
 * reads the whole table, so only then.
 *
 * The sampled claim takes up to 100 owed rows for the length of its EXPLAIN and then gives
 * them back (the relay skips them meanwhile: SKIP LOCKED); it leaves 100 aborted tuple
 * versions per sample behind, against 200 dead ones per 100 events the relay makes.
 */
import type pg from 'pg';
import { postgresStatements } from '../../src/storage/postgres.js';
import { tableNames } from '../../src/storage/tables.js';
import { connectPg } from '../pg.js';

/** The relay's claim size (`settings.batchSize`'s default). */
const CLAIM_BATCH = 100;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'Shared Dirtied Blocks'?: number;
  Plans?: PlanNode[];
}

/** A compact shape of a plan: each node's type (and index), depth-first. */
function shapeOf(n: PlanNode): string {
  const self = n['Index Name'] ? `${n['Node Type']}(${n['Index Name']})` : n['Node Type'];
  const kids = (n.Plans ?? []).map(shapeOf);
  return kids.length > 0 ? `${self}[${kids.join(',')}]` : self;
}

function* nodes(n: PlanNode): Generator<PlanNode> {
  yield n;
  for (const c of n.Plans ?? []) yield* nodes(c);
}

/** What one sample reads. */
export interface ClaimProbe {
  /** One sample; `final` adds the table-wide pgstattuple. */
  sample(final: boolean): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export async function openClaimProbe(schema: string): Promise<ClaimProbe> {
  const client: pg.Client = await connectPg('outboxkit-bench-claim-probe');
  const t = tableNames('outbox_', schema);
  const claimSql = postgresStatements(t, undefined).claim;
  const owedIndex = `"${schema}".outbox_deliveries_owed`;
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pgstattuple SCHEMA public');
  } catch {
    // Another run may be creating it at the same moment, or the server lacks it.
  }
  const ext = await client.query<{ nspname: string }>(
    `SELECT n.nspname FROM pg_extension x JOIN pg_namespace n ON n.oid = x.extnamespace WHERE x.extname = 'pgstattuple'`,
  );
  const statSchema = ext.rows[0]?.nspname;

  const explainClaim = async () => {
    const now = new Date();
    await client.query('BEGIN');
    try {
      const { rows } = await client.query<{ 'QUERY PLAN': unknown }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${claimSql}`,
        [
          `probe-${Math.random()}`,
          now,
          new Date(now.getTime() + 60_000),
          now,
          false,
          CLAIM_BATCH,
          [],
          null,
        ],
      );
      const raw = rows[0]?.['QUERY PLAN'];
      const doc = (typeof raw === 'string' ? JSON.parse(raw) : raw) as {
        Plan: PlanNode;
        'Execution Time': number;
        'Planning Time': number;
        Planning?: { 'Shared Hit Blocks'?: number; 'Shared Read Blocks'?: number };
      }[];
      const top = doc[0];
      if (!top) throw new Error('claim-prune probe: EXPLAIN returned no plan');
      const owed = [...nodes(top.Plan)].find((n) => n['Index Name'] === 'outbox_deliveries_owed');
      return {
        ms: Math.round(top['Execution Time'] * 100) / 100,
        planningMs: Math.round(top['Planning Time'] * 100) / 100,
        hit: top.Plan['Shared Hit Blocks'] ?? 0,
        read: top.Plan['Shared Read Blocks'] ?? 0,
        dirtied: top.Plan['Shared Dirtied Blocks'] ?? 0,
        planningHit: top.Planning?.['Shared Hit Blocks'] ?? 0,
        owedScan: owed
          ? {
              node: owed['Node Type'],
              rows: owed['Actual Rows'] ?? 0,
              hit: owed['Shared Hit Blocks'] ?? 0,
              read: owed['Shared Read Blocks'] ?? 0,
            }
          : null,
        shape: shapeOf(top.Plan),
      };
    } finally {
      await client.query('ROLLBACK');
    }
  };

  const tableStats = async () => {
    const { rows } = await client.query<Record<string, unknown>>(
      `SELECT relname, n_live_tup::int8::float8 AS live, n_dead_tup::int8::float8 AS dead,
              n_tup_upd::float8 AS updates, n_tup_hot_upd::float8 AS hot, n_tup_del::float8 AS deletes,
              autovacuum_count::int AS autovacuums, autoanalyze_count::int AS autoanalyzes,
              round(extract(epoch FROM now() - last_autovacuum))::int AS "lastAutovacuumSecondsAgo",
              round(extract(epoch FROM now() - last_autoanalyze))::int AS "lastAutoanalyzeSecondsAgo",
              pg_relation_size(relid)::float8 / 8192 AS pages
       FROM pg_stat_user_tables WHERE schemaname = $1 AND relname IN ('outbox_deliveries', 'outbox_events')`,
      [schema],
    );
    return Object.fromEntries(rows.map(({ relname, ...r }) => [String(relname), r]));
  };

  const vacuumNow = async () => {
    const { rows } = await client.query<Record<string, unknown>>(
      `SELECT c.relname, p.phase, p.heap_blks_scanned::float8 AS scanned, p.heap_blks_total::float8 AS total,
              p.index_vacuum_count::int AS "indexPasses",
              round(extract(epoch FROM now() - a.xact_start))::int AS "runningSeconds"
       FROM pg_stat_progress_vacuum p JOIN pg_class c ON c.oid = p.relid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_stat_activity a ON a.pid = p.pid
       WHERE n.nspname = $1`,
      [schema],
    );
    return rows;
  };

  const horizon = async () => {
    const { rows } = await client.query<{ age: number | null; backend: string | null }>(
      `SELECT max(age(backend_xmin))::int AS age,
              (array_agg(coalesce(application_name, '') || ':' || coalesce(state, '') ORDER BY age(backend_xmin) DESC NULLS LAST))[1] AS backend
       FROM pg_stat_activity WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid()`,
    );
    return rows[0] ?? { age: null, backend: null };
  };

  const indexSizes = async () => {
    const { rows } = await client.query<{ name: string; pages: number }>(
      `SELECT c.relname AS name, pg_relation_size(c.oid)::float8 / 8192 AS pages
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       WHERE i.indrelid = $1::regclass ORDER BY c.relname`,
      [`"${schema}".outbox_deliveries`],
    );
    return Object.fromEntries(rows.map((r) => [r.name.replace(/^outbox_/, ''), r.pages]));
  };

  const owedIndexStats = async () => {
    if (!statSchema) return null;
    const { rows } = await client.query<Record<string, unknown>>(
      `SELECT leaf_pages::int AS "leafPages", deleted_pages::int AS "deletedPages",
              empty_pages::int AS "emptyPages", avg_leaf_density::float8 AS "avgLeafDensity",
              tree_level::int AS levels
       FROM "${statSchema}".pgstatindex($1)`,
      [owedIndex],
    );
    return rows[0] ?? null;
  };

  const tableTuples = async () => {
    if (!statSchema) return null;
    const { rows } = await client.query<Record<string, unknown>>(
      `SELECT tuple_count::float8 AS live, dead_tuple_count::float8 AS dead,
              round(free_percent::numeric, 1)::float8 AS "freePercent", table_len::float8 / 8192 AS pages
       FROM "${statSchema}".pgstattuple($1)`,
      [`"${schema}".outbox_deliveries`],
    );
    return rows[0] ?? null;
  };

  return {
    async sample(final) {
      // The claim first: what it reads now, before the statistics queries touch anything.
      const claim = await explainClaim();
      return {
        claim,
        tables: await tableStats(),
        vacuumRunning: await vacuumNow(),
        oldestSnapshotAge: await horizon(),
        indexPages: await indexSizes(),
        owedIndex: await owedIndexStats(),
        ...(final ? { deliveriesTuples: await tableTuples() } : {}),
      };
    },
    async close() {
      await client.end();
    },
  };
}
