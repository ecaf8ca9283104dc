/**
 * EXPERIMENT (issue 7, latency): where the server spends a claim that takes ONE row, the
 * latency figure's case, on a table in service. One schema, `--history` settled events,
 * VACUUM (ANALYZE) + CHECKPOINT; then 20 rounds of: insert one owed event, claim it (src/'s
 * text, prepared, so rounds 6+ run the generic plan), mark it succeeded. Then one more row
 * and `EXPLAIN (ANALYZE, BUFFERS)` of the prepared claim, printed whole.
 *
 *   npx tsx bench/experiments/claim-one-explain.ts [--history 50000]
 */
import { parseArgs } from 'node:util';
import { createOutbox, silentLogger } from '../../src/index.js';
import { bareStatements } from '../bare/statements.js';
import {
  benchConfig,
  dropSchema,
  newSchemaName,
  openSequelize,
  wholeNumberOption,
} from '../common.js';
import { connectPg, settle } from '../pg.js';
import { seedSettled } from '../seed.js';

const { values: args } = parseArgs({ options: { history: { type: 'string', default: '50000' } } });
const HISTORY = wholeNumberOption('history', args.history);

const schema = newSchemaName();
const sequelize = openSequelize(2);
const outbox = createOutbox(benchConfig('noop-delivery'), {
  sequelize,
  schema,
  logger: silentLogger,
});
const client = await connectPg('claim-one-explain');
try {
  await outbox.migrate();
  await seedSettled(sequelize, schema, HISTORY, "interval '1 hour'");
  await settle(schema);
  const s = bareStatements(schema);
  const insert = async (n: number) => {
    await client.query({
      name: 'ins',
      text: s.insertAndNotify,
      values: [
        crypto.randomUUID(),
        'bench.Ping',
        JSON.stringify({ n }),
        new Date(),
        'noop',
        'nowhere',
      ],
    });
  };
  await client.query(
    `PREPARE claim_one(text, timestamptz, timestamptz, timestamptz, boolean, int, bigint[], bigint[]) AS ${s.claim}`,
  );
  /** EXECUTE with the claim's values as literals (EXECUTE takes no bind parameters). */
  const execute = () => {
    const now = new Date();
    const lit = (d: Date) => `'${d.toISOString()}'`;
    return `EXECUTE claim_one('w', ${lit(now)}, ${lit(new Date(now.getTime() + 60_000))}, ${lit(now)}, false, 100, '{}', NULL)`;
  };
  for (let n = 0; n < 20; n++) {
    await insert(n);
    const { rows } = await client.query(execute());
    await client.query({
      name: 'mark',
      text: s.markSucceeded,
      values: [rows.map((r: { id: string }) => r.id), new Date()],
    });
  }
  await insert(99);
  const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${execute()}`);
  for (const r of rows) console.log(r['QUERY PLAN']);
} finally {
  await client.end();
  await outbox.close();
  await dropSchema(sequelize, schema);
  await sequelize.close();
}
