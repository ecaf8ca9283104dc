/**
 * How much the claim pays for rows other batches hold: K rows at the head of the queue
 * claimed (a live lease, as another relay's batch in flight), then the claim of 500,
 * timed (EXPLAIN ANALYZE, BUFFERS) in a transaction rolled back.
 *
 *   npx tsx bench/experiments/claim-past-claimed.ts [--rows 50000] [--held 0,500,2000,4000]
 */
import { QueryTypes, type Transaction } from 'sequelize';
import { createOutbox, silentLogger } from '../../src/index.js';
import { postgresStatements } from '../../src/storage/postgres.js';
import { tableNames } from '../../src/storage/tables.js';
import { benchConfig, dropSchema, newSchemaName, openSequelize } from '../common.js';
import { analyze, seedBacklog } from '../seed.js';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const rows = Number(arg('rows', '50000'));
const helds = arg('held', '0,500,1000,2000,4000').split(',').map(Number);
const sqlText = process.env.CLAIM_SQL_FILE;

const sequelize = openSequelize(2);
const schema = newSchemaName();
try {
  const outbox = createOutbox(benchConfig('noop-deliver-batch'), {
    sequelize,
    schema,
    wakeup: null,
    logger: silentLogger,
  });
  await outbox.migrate();
  const t = tableNames('outbox_', schema);
  const claim = sqlText
    ? (await import('node:fs'))
        .readFileSync(sqlText, 'utf8')
        .replaceAll('$T', t.deliveries)
        .replaceAll('$E', t.events)
    : postgresStatements(t, undefined).claim;
  if (sqlText) {
    const prefix = `"${schema}".outbox_`;
    await sequelize.query(`DROP INDEX "${schema}".outbox_deliveries_owed`);
    await sequelize.query(
      `CREATE INDEX outbox_deliveries_ready ON ${t.deliveries} (event_id, id) WHERE status IN ('pending','failed')`,
    );
    await sequelize.query(
      `CREATE INDEX outbox_deliveries_leased ON ${t.deliveries} (lease_until) WHERE status = 'claimed'`,
    );
    void prefix;
  }
  await seedBacklog(outbox, rows);
  await outbox.close();
  await analyze(sequelize, schema);
  for (const held of helds) {
    const times: number[] = [];
    let buffers = 0;
    for (let i = 0; i < 7; i++) {
      const tx: Transaction = await sequelize.transaction();
      try {
        const now = new Date();
        if (held > 0)
          await sequelize.query(
            `UPDATE ${t.deliveries} SET status = 'claimed', claimed_by = 'other', claimed_at = now(), lease_until = now() + interval '1 hour'
             WHERE id IN (SELECT id FROM ${t.deliveries} WHERE status = 'pending' ORDER BY event_id, id LIMIT ${held})`,
            { transaction: tx },
          );
        const res = (await sequelize.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${claim}`, {
          bind: [`me-${i}`, now, new Date(now.getTime() + 60_000), now, false, 500, [], null],
          transaction: tx,
          type: QueryTypes.SELECT,
        })) as {
          'QUERY PLAN': [{ 'Execution Time': number; Plan: { 'Shared Hit Blocks': number } }];
        }[];
        const r = res[0]['QUERY PLAN'][0];
        times.push(r['Execution Time']);
        buffers = r.Plan['Shared Hit Blocks'];
        if (process.env.SHOW_PLAN && i === 0 && held === 4000)
          console.log(
            JSON.stringify(r.Plan, (k, v) =>
              [
                'Plans',
                'Node Type',
                'Index Name',
                'Actual Rows',
                'Shared Hit Blocks',
                'Actual Total Time',
                'Rows Removed by Filter',
                'Alias',
              ].includes(k) ||
              /^[0-9]+$/.test(k) ||
              k === ''
                ? v
                : undefined,
            ),
          );
      } finally {
        await tx.rollback();
      }
    }
    times.sort((a, b) => a - b);
    console.log(JSON.stringify({ alt: !!sqlText, held, p50ms: times[3], min: times[0], buffers }));
  }
} finally {
  await dropSchema(sequelize, schema);
  await sequelize.close();
}
