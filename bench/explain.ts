/**
 * The plans of the relay's hot statements on a 50,000-row deliveries table.
 *
 * The statements are not copied here: they are the text src/ runs, built by the store's own
 * `postgresStatements(tableNames('outbox_', schema), …)`. The table is seeded and each
 * statement is run under EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) in a transaction that is
 * rolled back, with parameters bound by the contract their header comments document:
 * - claim `$1` worker, `$2` claimed at, `$3` lease until, `$4` now, `$5` ignore backoff,
 *   `$6` limit, `$7` ids to leave out, `$8` the only ids to consider (NULL: all);
 * - record `$1..$7` outcome arrays (id, status, attempts, available_at, due_at, last_error,
 *   completed_at), `$8` worker, `$9` claimed at;
 * - acknowledge `$1` worker, `$2` claimed at, `$3` the row, `$4` completed at.
 * The claim is explained on the statistics `migrate()` left (it ANALYZEs the tables it
 * creates, so these are the statistics of empty tables: `stats: migrate`) and after an
 * ANALYZE of the seeded tables, and in the `id IN (SELECT …)` form the issue warns about; the record right after a claim of 500 rows, once with every outcome
 * succeeded and once with every outcome failed (retry later); the acknowledgement of one
 * claimed row. src/ runs the acknowledgement as a prepared statement (after five runs
 * PostgreSQL may switch it to a generic plan); EXPLAIN here shows the custom plan.
 */
import { QueryTypes, type Sequelize, type Transaction } from 'sequelize';
import { createOutbox, silentLogger } from '../src/index.js';
import { postgresStatements } from '../src/storage/postgres.js';
import { tableNames } from '../src/storage/tables.js';
import {
  benchConfig,
  dropSchema,
  emit,
  newSchemaName,
  note,
  openSequelize,
  round,
} from './common.js';
import { analyze, seedBacklog } from './seed.js';

export interface ExplainOptions {
  readonly rows: number;
  readonly batchSize: number;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Actual Total Time'?: number;
  'Rows Removed by Join Filter'?: number;
  'Rows Removed by Filter'?: number;
  'Join Filter'?: string;
  Plans?: PlanNode[];
}

interface ExplainResult {
  readonly executionMs: number;
  readonly planningMs: number;
  readonly plan: PlanNode;
}

type OutcomeKind = 'succeeded' | 'failed';

export async function benchExplain(o: ExplainOptions): Promise<Record<string, unknown>[]> {
  const sequelize = openSequelize(2);
  const schema = newSchemaName();
  const figures: Record<string, unknown>[] = [];
  try {
    const outbox = createOutbox(benchConfig('noop-deliver-batch'), {
      sequelize,
      schema,
      wakeup: null,
      logger: silentLogger,
    });
    await outbox.migrate();
    // The text src/ runs (the default table prefix; no notify channel, as above).
    const sql = postgresStatements(tableNames('outbox_', schema), undefined);
    const claimSql = sql.claim;
    await seedBacklog(outbox, o.rows);
    await outbox.close();

    const claimBind = () => {
      const now = new Date();
      return [
        `explain-${Math.random()}`,
        now,
        new Date(now.getTime() + 60_000),
        now,
        false,
        o.batchSize,
        [],
        null,
      ];
    };
    const inForm = toInSubquery(claimSql);
    const cases: { label: string; stats: string; form: string; sql: string }[] = [
      { label: 'claim', stats: 'migrate', form: 'any-array', sql: claimSql },
    ];
    for (const c of cases) figures.push(await explainClaim(sequelize, c, claimBind));
    await analyze(sequelize, schema);
    const analyzed = [
      { label: 'claim', stats: 'analyzed', form: 'any-array', sql: claimSql },
      ...(inForm ? [{ label: 'claim', stats: 'analyzed', form: 'in-subquery', sql: inForm }] : []),
    ];
    for (const c of analyzed) figures.push(await explainClaim(sequelize, c, claimBind));
    for (const kind of ['succeeded', 'failed'] as const)
      figures.push(await explainRecord(sequelize, claimSql, sql.record, claimBind, kind));
    figures.push(await explainAcknowledge(sequelize, claimSql, sql.acknowledge, claimBind));
    for (const f of figures) emit(f);
    return figures;
  } finally {
    await dropSchema(sequelize, schema);
    await sequelize.close();
    note(`explain: schema ${schema} dropped`);
  }

  async function explainClaim(
    s: Sequelize,
    c: { label: string; stats: string; form: string; sql: string },
    bind: () => unknown[],
  ): Promise<Record<string, unknown>> {
    const runs: ExplainResult[] = [];
    for (let i = 0; i < 3; i++) {
      runs.push(await inRolledBack(s, (t) => explain(s, c.sql, bind(), t)));
    }
    return summarize(
      `claim (${c.form}, stats: ${c.stats})`,
      { statement: c.label, stats: c.stats, form: c.form },
      runs,
    );
  }

  async function explainRecord(
    s: Sequelize,
    claim: string,
    record: string,
    bind: () => unknown[],
    kind: OutcomeKind,
  ): Promise<Record<string, unknown>> {
    const runs: ExplainResult[] = [];
    for (let i = 0; i < 3; i++) {
      runs.push(
        await inRolledBack(s, async (t) => {
          const b = bind();
          const claimed = (await s.query(claim, {
            bind: b,
            transaction: t,
            type: QueryTypes.SELECT,
          })) as { id: string; attempts: number }[];
          const now = new Date();
          const retryAt = new Date(now.getTime() + 30_000);
          const failed = kind === 'failed';
          return explain(
            s,
            record,
            [
              claimed.map((r) => r.id),
              claimed.map(() => kind),
              claimed.map((r) => Number(r.attempts) + 1),
              claimed.map(() => (failed ? retryAt : null)),
              claimed.map(() => null),
              claimed.map(() => (failed ? 'Error: bench failure' : null)),
              claimed.map(() => now),
              b[0],
              b[1],
            ],
            t,
          );
        }),
      );
    }
    return summarize(
      `record (all ${kind}, stats: analyzed)`,
      { statement: 'record', stats: 'analyzed', outcomes: kind },
      runs,
    );
  }

  async function explainAcknowledge(
    s: Sequelize,
    claim: string,
    acknowledge: string,
    bind: () => unknown[],
  ): Promise<Record<string, unknown>> {
    const runs: ExplainResult[] = [];
    for (let i = 0; i < 3; i++) {
      runs.push(
        await inRolledBack(s, async (t) => {
          const b = bind();
          b[5] = 1;
          const claimed = (await s.query(claim, {
            bind: b,
            transaction: t,
            type: QueryTypes.SELECT,
          })) as { id: string }[];
          return explain(s, acknowledge, [b[0], b[1], claimed[0]?.id, new Date()], t);
        }),
      );
    }
    return summarize(
      'acknowledge (one claimed row, stats: analyzed)',
      { statement: 'acknowledge', stats: 'analyzed', limit: 1 },
      runs,
    );
  }

  function summarize(
    title: string,
    labels: Record<string, string | number>,
    runs: ExplainResult[],
  ): Record<string, unknown> {
    const sorted = [...runs].sort((a, b) => a.executionMs - b.executionMs);
    const median = sorted[Math.floor(sorted.length / 2)];
    const nodes = flatten(median.plan);
    note(
      `---- EXPLAIN ANALYZE ${title}, ${o.rows} rows, median of ${runs.length}: ${round(median.executionMs)} ms\n${render(median.plan)}`,
    );
    return {
      bench: 'explain',
      tableRows: o.rows,
      limit: o.batchSize,
      ...labels,
      executionMs: round(median.executionMs),
      planningMs: round(median.planningMs),
      seqScanOnDeliveries: nodes.some(
        (n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'outbox_deliveries',
      ),
      indexesUsed: [...new Set(nodes.map((n) => n['Index Name']).filter(Boolean))],
      rowsRemovedByJoinFilter: nodes.reduce(
        (a, n) => a + (n['Rows Removed by Join Filter'] ?? 0),
        0,
      ),
    };
  }
}

async function explain(
  s: Sequelize,
  sql: string,
  bind: unknown[],
  transaction: Transaction,
): Promise<ExplainResult> {
  const rows = (await s.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, {
    bind,
    transaction,
    type: QueryTypes.SELECT,
  })) as {
    'QUERY PLAN': [{ Plan: PlanNode; 'Execution Time': number; 'Planning Time': number }];
  }[];
  const [result] = rows[0]['QUERY PLAN'];
  return {
    executionMs: result['Execution Time'],
    planningMs: result['Planning Time'],
    plan: result.Plan,
  };
}

async function inRolledBack<T>(s: Sequelize, work: (t: Transaction) => Promise<T>): Promise<T> {
  const t = await s.transaction();
  try {
    return await work(t);
  } finally {
    await t.rollback();
  }
}

/** The claim in the `d.id IN (SELECT …)` form, or undefined if the text has changed shape. */
function toInSubquery(sql: string): string | undefined {
  const open = 'd.id = ANY(ARRAY(';
  const at = sql.indexOf(open);
  if (at < 0) return undefined;
  const close = sql.indexOf('))', sql.indexOf('SKIP LOCKED', at));
  if (close < 0) return undefined;
  return `${sql.slice(0, at)}d.id IN (${sql.slice(at + open.length, close)})${sql.slice(close + 2)}`;
}

function flatten(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(flatten)];
}

function render(node: PlanNode, depth = 0): string {
  const on = node['Relation Name'] ? ` on ${node['Relation Name']}` : '';
  const using = node['Index Name'] ? ` using ${node['Index Name']}` : '';
  const removed = node['Rows Removed by Join Filter']
    ? `, removed by join filter=${node['Rows Removed by Join Filter']}`
    : '';
  const line = `${'  '.repeat(depth)}-> ${node['Node Type']}${using}${on} (rows=${node['Actual Rows']} loops=${node['Actual Loops']} time=${round(node['Actual Total Time'] ?? 0)} ms${removed})`;
  return [line, ...(node.Plans ?? []).map((p) => render(p, depth + 1))].join('\n');
}
