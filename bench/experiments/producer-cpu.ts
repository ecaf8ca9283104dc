/**
 * EXPERIMENT (issue 7, the latency bench's producers): the client CPU and wall time of one
 * producer transaction, per way of writing the event, in one process, sequentially (no
 * relay runs). Answers why four `fire()` producers reach ~520 of 1,000 events/s where the
 * bare producers reach ~950.
 *
 * Variants, each BEGIN … COMMIT of one event (and its NOTIFY unless said):
 * - `pg-bare`: node-postgres, the bare producer's prepared INSERT + pg_notify;
 * - `seq-empty`: `sequelize.transaction()` and `commit()`, nothing in between;
 * - `seq-bare`: the same with the bare INSERT + pg_notify through `sequelize.query`;
 * - `seq-fire`: the same with `outbox.fire()` (the latency producer's transaction).
 * Per variant: wall and this process's CPU per transaction, and the CPU every postgres
 * process spent meanwhile (the server is shared: run it on a quiet machine).
 *
 *   npx tsx bench/experiments/producer-cpu.ts [--n 3000] [--rounds 3] [--only seq-fire,…]
 *
 * For a profile: node --import tsx --cpu-prof --cpu-prof-dir /tmp/prof bench/experiments/producer-cpu.ts --only seq-fire
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { QueryTypes } from 'sequelize';
import { createOutbox, silentLogger } from '../../src/index.js';
import { bareStatements } from '../bare/statements.js';
import { benchConfig, dropSchema, newSchemaName, nowMs, openSequelize } from '../common.js';
import { connectPg, settle } from '../pg.js';
import { benchWakeup } from '../wakeups.js';
import { cpuNow } from './proc-cpu.js';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '3' },
    only: { type: 'string' },
  },
});
const N = Number(args.n);
const ROUNDS = Number(args.rounds);

const sequelize = openSequelize(1);
const schema = newSchemaName();
const outbox = createOutbox(benchConfig('probe-handler'), {
  sequelize,
  schema,
  wakeup: benchWakeup('listen-notify', 'outboxkit_xp'),
  logger: silentLogger,
});
await outbox.migrate();
await sequelize.authenticate();
const client = await connectPg('xp-producer');
const bare = bareStatements(schema);
// The bare statement writes into outboxkit's own tables (bare/statements.ts).
const bareSql = bare.insertAndNotify;
const bareValues = (n: number): unknown[] => [
  randomUUID(),
  'bench.Ping',
  JSON.stringify({ n, note: 'latency' }),
  new Date(),
  'noop',
  'outboxkit_xp',
];
type Variant = 'pg-bare' | 'seq-empty' | 'seq-bare' | 'seq-fire';
const variants: Record<Variant, (n: number) => Promise<void>> = {
  'pg-bare': async (n) => {
    await client.query('BEGIN');
    await client.query({ name: 'xp_bare', text: bareSql, values: bareValues(n) });
    await client.query('COMMIT');
  },
  'seq-empty': async () => {
    const t = await sequelize.transaction();
    await t.commit();
  },
  'seq-bare': async (n) => {
    const t = await sequelize.transaction();
    await sequelize.query(bareSql, {
      bind: bareValues(n),
      transaction: t,
      type: QueryTypes.SELECT,
    });
    await t.commit();
  },
  'seq-fire': async (n) => {
    const t = await sequelize.transaction();
    await outbox.fire('bench.Ping', { n, note: 'latency' }, { transaction: t });
    await t.commit();
  },
};

const names = (args.only?.split(',') ?? Object.keys(variants)) as Variant[];
const results: Record<string, { wallUs: number[]; cpuUs: number[]; pgUs: number[] }> = {};
try {
  for (const name of names) for (let i = 0; i < 500; i++) await variants[name](i);
  await settle(schema);
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(k + r) % names.length] as Variant;
      const cpu0 = process.cpuUsage();
      const pg0 = cpuNow(undefined).postgres;
      const t0 = nowMs();
      for (let i = 0; i < N; i++) await variants[name](i);
      const wall = nowMs() - t0;
      const cpu = process.cpuUsage(cpu0);
      const pgCpu = cpuNow(undefined).postgres - pg0;
      const entry = results[name] ?? { wallUs: [], cpuUs: [], pgUs: [] };
      results[name] = entry;
      entry.wallUs.push(Math.round((wall * 1000) / N));
      entry.cpuUs.push(Math.round((cpu.user + cpu.system) / N));
      entry.pgUs.push(Math.round((pgCpu * 1e6) / N));
    }
  }
  for (const name of names) {
    const e = results[name];
    if (!e) continue;
    process.stdout.write(
      `${name.padEnd(10)} wall µs/tx ${e.wallUs.join(' / ')}   client CPU µs/tx ${e.cpuUs.join(' / ')}   postgres CPU µs/tx ${e.pgUs.join(' / ')}\n`,
    );
  }
} finally {
  await client.end();
  await dropSchema(sequelize, schema);
  await outbox.close();
  await sequelize.close();
}
