/**
 * EXPERIMENT (issue 7, latency): the claim's round trip as the tables grow from where a
 * latency run starts, on a server without autovacuum (this machine's: `autovacuum = off`).
 *
 * One schema by `migrate()`, `--history` settled events seeded (one succeeded delivery
 * each), VACUUM (ANALYZE) + CHECKPOINT, as `bench/latency.ts` does before its clock. Then
 * `--events` rounds: insert one owed event + delivery and COMMIT (the bare producer's
 * statement), 4 ms idle (200 events/s), one claim (timed: its round trip), mark the row
 * succeeded (not timed). The variants take turns, one per round, each a named prepared
 * statement on one connection:
 *
 * - `current`: src/'s claim text;
 * - `lateral`: the same, the event read per claimed row (`CROSS JOIN LATERAL … LIMIT 1`)
 *   instead of joined, so no plan of it reads the whole events table;
 * - `replan`: src/'s text under a new statement name every 150 claims, so its generic plan
 *   is made again against the tables' current size (the statistics stay as they were).
 *
 * Prints each variant's p50 per quarter of the run: a plan that reads more as the history
 * grows shows as a rising row. `--analyze-every N` runs ANALYZE on both tables every N
 * rounds (autovacuum's analyze, roughly).
 *
 *   npx tsx bench/experiments/claim-growth.ts [--events 3000] [--history 0] [--analyze-every 0]
 */
import { parseArgs } from 'node:util';
import { createOutbox, silentLogger } from '../../src/index.js';
import { bareStatements, type ClaimedRow, claimValues } from '../bare/statements.js';
import {
  benchConfig,
  dropSchema,
  newSchemaName,
  nowMs,
  openSequelize,
  quantile,
  round,
  sleep,
  wholeNumberOption,
} from '../common.js';
import { connectPg, settle } from '../pg.js';
import { seedSettled } from '../seed.js';

const { values: args } = parseArgs({
  options: {
    events: { type: 'string', default: '3000' },
    history: { type: 'string', default: '0' },
    'analyze-every': { type: 'string', default: '0' },
  },
});
const EVENTS = wholeNumberOption('events', args.events, 4);
const HISTORY = wholeNumberOption('history', args.history);
const ANALYZE_EVERY = wholeNumberOption('analyze-every', args['analyze-every']);

const sequelize = openSequelize(2);
const schema = newSchemaName();
try {
  const outbox = createOutbox(benchConfig('probe-handler'), {
    sequelize,
    schema,
    logger: silentLogger,
  });
  await outbox.migrate();
  await outbox.close();
  await seedSettled(sequelize, schema, HISTORY, "interval '1 hour'");
  await settle(schema);
  const sql = bareStatements(schema);
  const events = `"${schema}"."outbox_events"`;
  const join = `FROM claimed c JOIN ${events} e ON e.id = c.event_id`;
  if (!sql.claim.includes(join)) throw new Error('the claim no longer joins the events so');
  const variants: Record<string, string> = {
    current: sql.claim,
    lateral: sql.claim.replace(
      join,
      `FROM claimed c CROSS JOIN LATERAL (SELECT * FROM ${events} e0 WHERE e0.id = c.event_id LIMIT 1) e`,
    ),
    replan: sql.claim,
  };
  const names = Object.keys(variants);
  const claimer = await connectPg('bench-claim-growth');
  const writer = await connectPg('bench-claim-growth-writer');
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  try {
    for (let n = 0; n < EVENTS; n++) {
      const variant = names[n % names.length];
      await writer.query({
        name: 'insert',
        text: sql.insertAndNotify,
        values: [crypto.randomUUID(), 'bench.Ping', JSON.stringify({ n }), new Date(), 'noop', 'x'],
      });
      await sleep(4);
      const name = variant === 'replan' ? `replan_${Math.floor(n / 150)}` : variant;
      const started = nowMs();
      const { rows } = await claimer.query<ClaimedRow>({
        name,
        text: variants[variant],
        values: claimValues('w', 100, new Date()),
      });
      times[variant].push(nowMs() - started);
      if (rows.length !== 1) throw new Error(`${variant} claimed ${rows.length} rows, not 1`);
      await writer.query({
        name: 'mark',
        text: sql.markSucceeded,
        values: [rows.map((r) => r.id), new Date()],
      });
      if (ANALYZE_EVERY > 0 && n % ANALYZE_EVERY === ANALYZE_EVERY - 1) {
        await writer.query(`ANALYZE "${schema}"."outbox_deliveries"`);
        await writer.query(`ANALYZE "${schema}"."outbox_events"`);
      }
    }
  } finally {
    await claimer.end();
    await writer.end();
  }
  const p50 = (a: readonly number[]) =>
    round(
      quantile(
        [...a].sort((x, y) => x - y),
        0.5,
      ),
    );
  const out: Record<string, unknown> = {
    bench: 'claim-growth',
    events: EVENTS,
    history: HISTORY,
    analyzeEvery: ANALYZE_EVERY,
  };
  for (const v of names) {
    const a = times[v];
    const q = Math.floor(a.length / 4);
    out[v] = [0, 1, 2, 3].map((k) => p50(a.slice(k * q, (k + 1) * q)));
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
} finally {
  await dropSchema(sequelize, schema);
  await sequelize.close();
}
