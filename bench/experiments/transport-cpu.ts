/**
 * Client CPU per event of one transport drain, in this one process: outboxkit's relay
 * (`deliver` or `deliverBatch`, a no-op) against the bare SQL loop (src/'s claim,
 * prepared, and the hand-written mark, on one node-postgres client), over the same kind of
 * backlog, each warmed up on a backlog of its own first (untimed). The wall-clock drain
 * figures of 4 relays on 2 cores follow the sum of every process's CPU per event, so this
 * is where the relay's share of it is measured, without the noise of a shared machine.
 *
 *   npx tsx bench/experiments/transport-cpu.ts [--events 50000] [--warmup 20000] [--rounds 3]
 *     [--kinds deliver,batch,bare,bare-seq] [--profile DIR]   # DIR/<kind>-<round>.cpuprofile
 *     [--heap-profile DIR]   # DIR/<kind>-<round>.heapprofile: every allocation sampled
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createOutbox, silentLogger } from '../../src/index.js';
import { bareStatements, type ClaimedRow, claimValues } from '../bare/statements.js';
import { benchConfig, dropSchema, newSchemaName, openSequelize, PG_URL } from '../common.js';
import { connectPg } from '../pg.js';
import { analyze, seedBacklog } from '../seed.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '50000' },
    warmup: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    kinds: { type: 'string', default: 'deliver,batch,bare' },
    'batch-size': { type: 'string', default: '500' },
    profile: { type: 'string' },
    'heap-profile': { type: 'string' },
  },
});
const events = Number(values.events);
const warmup = Number(values.warmup);
const batchSize = Number(values['batch-size']);
type Kind = 'deliver' | 'batch' | 'bare' | 'bare-seq';
const kinds = values.kinds.split(',') as Kind[];

const sequelize = openSequelize(4);

/** A seeded, analysed schema of `n` events (one noop delivery each). */
async function seeded(n: number, kind: Kind) {
  const schema = newSchemaName();
  await sequelize.query(`CREATE SCHEMA "${schema}"`);
  const config = benchConfig(kind === 'deliver' ? 'noop-delivery' : 'noop-deliver-batch');
  const outbox = createOutbox(config, { sequelize, schema, wakeup: null, logger: silentLogger });
  await outbox.migrate();
  await seedBacklog(outbox, n);
  await analyze(sequelize, schema);
  await sequelize.query('VACUUM');
  await sequelize.query('CHECKPOINT');
  return { schema, outbox };
}

const bareClient = await connectPg('bench-transport-cpu');
/**
 * The bare loop's client with Sequelize's type parsers, as Sequelize's own connections
 * have them (the `bare-seq` kind): what those parsers cost on the claim's rows.
 */
await sequelize.authenticate();
const manager = sequelize.connectionManager as unknown as {
  getTypeParser(oid: number, format?: string): (value: string) => unknown;
};
const seqClient = new pg.Client({
  connectionString: PG_URL,
  application_name: 'bench-transport-cpu-seq',
  types: { getTypeParser: manager.getTypeParser.bind(manager) } as pg.CustomTypesConfig,
});
await seqClient.connect();
async function bareDrain(schema: string, client = bareClient): Promise<number> {
  const sql = bareStatements(schema);
  let n = 0;
  for (;;) {
    const { rows } = await client.query<ClaimedRow>({
      name: `bare_claim_${schema}`,
      text: sql.claim,
      values: claimValues('bare', batchSize, new Date()),
    });
    if (rows.length === 0) return n;
    await client.query({
      name: `bare_mark_${schema}`,
      text: sql.markSucceeded,
      values: [rows.map((r) => r.id), new Date()],
    });
    n += rows.length;
  }
}

async function drain(kind: Kind, s: Awaited<ReturnType<typeof seeded>>) {
  if (kind === 'bare') return bareDrain(s.schema);
  if (kind === 'bare-seq') return bareDrain(s.schema, seqClient);
  const report = await s.outbox.runRelay({ untilIdle: true, batchSize, workerId: 'cpu' });
  return report.succeeded;
}

const results: Record<string, number[]> = {};
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const kind of kinds) {
    const warm = await seeded(warmup, kind);
    await drain(kind, warm);
    const timed = await seeded(events, kind);
    let session: Session | undefined;
    if (values.profile) {
      session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 100 });
      await session.post('Profiler.start');
    }
    let heapSession: Session | undefined;
    if (values['heap-profile']) {
      heapSession = new Session();
      heapSession.connect();
      // Every allocation sampled, kept or collected: where the bytes per event come from.
      await heapSession.post('HeapProfiler.startSampling', {
        samplingInterval: 512,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    }
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const n = await drain(kind, timed);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    if (session) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(`${values.profile}/${kind}-${round}.cpuprofile`, JSON.stringify(profile));
      session.disconnect();
    }
    if (heapSession) {
      const { profile } = await heapSession.post('HeapProfiler.stopSampling');
      writeFileSync(
        `${values['heap-profile']}/${kind}-${round}.heapprofile`,
        JSON.stringify(profile),
      );
      heapSession.disconnect();
    }
    const perEvent = (cpu.user + cpu.system) / n;
    results[kind] = [...(results[kind] ?? []), perEvent];
    process.stdout.write(
      `${JSON.stringify({ round, kind, events: n, seconds: +seconds.toFixed(3), eventsPerSecond: Math.round(n / seconds), cpuUsPerEvent: +perEvent.toFixed(2), userUsPerEvent: +(cpu.user / n).toFixed(2) })}\n`,
    );
    for (const s of [warm, timed]) {
      await s.outbox.close();
      await dropSchema(sequelize, s.schema);
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
process.stdout.write(
  `${JSON.stringify({ medianCpuUsPerEvent: Object.fromEntries(Object.entries(results).map(([k, v]) => [k, +median(v).toFixed(2)])) })}\n`,
);
await bareClient.end();
await seqClient.end();
await sequelize.close();
