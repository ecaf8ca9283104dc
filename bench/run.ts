/**
 * `npm run bench`: outboxkit's benchmark, on PostgreSQL. Prints one JSON line per figure on
 * stdout; progress and query plans go to stderr. See bench/README.md.
 *
 *   npm run bench                              # everything (about 3 minutes)
 *   npm run bench -- --only drain,latency      # some of: environment, explain, drain, latency, write
 *   npm run bench -- --only prune,claim-prune  # the prune figures (not in the default run)
 *   npm run bench -- --only console            # the console's pages on 1,000,000 events (not in the default run)
 *   npm run bench -- --only claim-prune --claim-prune-explain 100000 --claim-prune-autovacuum 60
 *                                              # with the claim's buffers sampled, autovacuum emulated (issue 9)
 *   npm run bench -- --events 20000            # a smaller backlog for the drains
 *   npm run bench -- --only redis-streams      # relay to Redis Streams vs a raw ioredis loop
 *   npm run bench -- --receivers noop-handler,bare-handler --relays 4
 *   npm run bench -- --only latency --systems outboxkit,bare --rate 1000
 *   npm run bench -- --only drain --receivers noop-handler --experiment async-commit-handlers
 *   npm run bench -- --compare [--rounds 3] [--no-peers] [--only …]   # see compare.ts
 *   npm run bench:compare -- --dialect mariadb [--rounds 2] [--events 20000]  # see mariadb.ts
 *
 * Each part works in a fresh schema (`bench_<hex>`) that it drops afterwards, also on failure.
 */
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { buildChildren } from './build.js';
import { benchClaimPrune } from './claim-prune.js';
import { emit, isReceiverKind, note, openSequelize, wholeNumberOption } from './common.js';
import { compareMain } from './compare.js';
import { benchConsole } from './console.js';
import { benchDrain, type DrainKind } from './drain.js';
import { benchExplain } from './explain.js';
import { benchLatency, type LatencySystem } from './latency.js';
import { ensurePeers } from './peers/install.js';
import { EXPERIMENTS, type Experiment } from './protocol.js';
import { benchPrune } from './prune.js';
import { benchRedisStreams } from './redis-streams.js';
import { ensureBenchKafka, parseBenchWakeups } from './wakeups.js';
import { benchWriteCost } from './write-cost.js';

const DRAIN_KINDS: readonly DrainKind[] = [
  'noop-delivery',
  'noop-deliver-batch',
  'noop-handler',
  'fanout10-deliver-batch',
  'bare-transport',
  'bare-handler',
];
const LATENCY_SYSTEMS: readonly LatencySystem[] = ['outboxkit', 'bare', 'graphile', 'pgboss'];

const OPTIONS = {
  only: { type: 'string', default: 'environment,explain,drain,latency,write' },
  events: { type: 'string', default: '50000' },
  'batch-size': { type: 'string', default: '500' },
  concurrency: { type: 'string', default: '10' },
  relays: { type: 'string', default: '1,4' },
  receivers: { type: 'string', default: 'noop-delivery,noop-deliver-batch,noop-handler' },
  rate: { type: 'string', default: '200' },
  seconds: { type: 'string', default: '10' },
  warmup: { type: 'string', default: '1' },
  producers: { type: 'string' },
  'producer-async-commit': { type: 'boolean', default: false },
  'latency-history': { type: 'string', default: '50000' },
  systems: { type: 'string', default: 'outboxkit' },
  wakeups: { type: 'string', default: 'listen-notify' },
  iterations: { type: 'string', default: '3000' },
  experiment: { type: 'string' },
  'prune-rows': { type: 'string', default: '100000' },
  'prune-history': { type: 'string', default: '0,100000,1000000' },
  'prune-repeats': { type: 'string', default: '20' },
  'claim-prune-events': { type: 'string', default: '1000000' },
  'claim-prune-wave': { type: 'string', default: '20000' },
  'claim-prune-pruner': { type: 'string', default: 'on,off' },
  'claim-prune-explain': { type: 'string', default: '0' },
  'claim-prune-storage': { type: 'string', default: '' },
  'claim-prune-autovacuum': { type: 'string', default: '0' },
  'console-events': { type: 'string', default: '1000000' },
} as const;

/** A whole number ≥ 1 given for `--name`. */
const positiveInt = (name: string, text: string): number => wholeNumberOption(name, text, 1);

async function main(): Promise<void> {
  const { values } = parseArgs({ options: OPTIONS });
  const only = new Set(values.only.split(','));
  const events = positiveInt('events', values.events);
  const batchSize = positiveInt('batch-size', values['batch-size']);
  const concurrency = positiveInt('concurrency', values.concurrency);
  const relayCounts = values.relays.split(',').map((r) => positiveInt('relays', r));
  const receivers = values.receivers.split(',');
  for (const r of receivers) {
    if (!(DRAIN_KINDS as readonly string[]).includes(r))
      throw new Error(`--receivers: unknown receiver ${r} (${DRAIN_KINDS.join(', ')})`);
  }

  const experiment = values.experiment;
  if (experiment !== undefined && !(EXPERIMENTS as readonly string[]).includes(experiment))
    throw new Error(`--experiment: unknown experiment ${experiment} (${EXPERIMENTS.join(', ')})`);

  if (only.has('environment')) await environment();
  if (only.has('explain')) {
    note('explain: the claim, record and acknowledge statements on a 50,000-row table …');
    await benchExplain({ rows: 50_000, batchSize });
  }
  if (only.has('drain')) {
    for (const kind of receivers as DrainKind[]) {
      if (experiment !== undefined && !isReceiverKind(kind)) continue;
      for (const relays of relayCounts) {
        note(`drain: ${kind} with ${relays} relay process(es), ${events} events …`);
        await benchDrain({
          kind,
          relays,
          events,
          batchSize,
          concurrency,
          experiment: experiment as Experiment | undefined,
        });
      }
    }
  }
  if (only.has('latency')) {
    const rate = positiveInt('rate', values.rate);
    const seconds = positiveInt('seconds', values.seconds);
    const producers = values.producers ? positiveInt('producers', values.producers) : undefined;
    const history = wholeNumberOption('latency-history', values['latency-history']);
    const systems = values.systems.split(',');
    for (const s of systems)
      if (!(LATENCY_SYSTEMS as readonly string[]).includes(s))
        throw new Error(`--systems: unknown system ${s} (${LATENCY_SYSTEMS.join(', ')})`);
    if (systems.includes('graphile') || systems.includes('pgboss')) ensurePeers();
    const wakeups = parseBenchWakeups(values.wakeups);
    const stopKafka = wakeups.includes('kafka') ? await ensureBenchKafka() : () => {};
    for (const system of systems as LatencySystem[]) {
      // Only outboxkit's relay takes another wakeup; the others have the one they have.
      for (const wakeup of system === 'outboxkit' ? wakeups : [undefined]) {
        note(
          `latency: ${system}${wakeup ? ` (${wakeup})` : ''}, ${rate} events/s for ${seconds} s …`,
        );
        await benchLatency({
          system,
          rate,
          seconds,
          warmupSeconds: positiveInt('warmup', values.warmup),
          producers,
          producerSynchronousCommit: values['producer-async-commit'] ? false : undefined,
          history,
          wakeup,
        });
      }
    }
    stopKafka();
  }
  if (only.has('prune')) {
    const histories = values['prune-history'].split(',').map((h) => {
      const n = Number(h);
      if (!Number.isInteger(n) || n < 0)
        throw new Error(`--prune-history must be whole numbers ≥ 0 (got ${h})`);
      return n;
    });
    await benchPrune({
      rows: positiveInt('prune-rows', values['prune-rows']),
      histories,
      repeats: positiveInt('prune-repeats', values['prune-repeats']),
    });
  }
  if (only.has('redis-streams')) {
    const relays = values.relays.split(',').map((r) => positiveInt('relays', r));
    await benchRedisStreams({ events, batchSize, relays, rounds: 3 });
  }
  if (only.has('claim-prune')) {
    const pruner = values['claim-prune-pruner'].split(',').map((p) => {
      if (p !== 'on' && p !== 'off' && p !== 'sweep')
        throw new Error(`--claim-prune-pruner takes on, off and sweep, comma-separated (got ${p})`);
      return p === 'on' ? ('loop' as const) : p;
    });
    await benchClaimPrune({
      events: positiveInt('claim-prune-events', values['claim-prune-events']),
      wave: positiveInt('claim-prune-wave', values['claim-prune-wave']),
      pruner,
      explainEvery: Number(values['claim-prune-explain']),
      deliveriesStorage: values['claim-prune-storage'],
      autovacuumNaptime: Number(values['claim-prune-autovacuum']),
    });
  }
  if (only.has('console')) {
    await benchConsole({ events: positiveInt('console-events', values['console-events']) });
  }
  if (only.has('write')) {
    const iterations = positiveInt('iterations', values.iterations);
    note(`write-cost: ${iterations} transactions of each kind …`);
    await benchWriteCost({ iterations, rounds: 10, warmup: 200 });
  }
}

/** What the figures were measured on. */
async function environment(): Promise<void> {
  const sequelize = openSequelize(1);
  try {
    const [rows] = (await sequelize.query(
      `SELECT current_setting('server_version') AS version, current_setting('synchronous_commit') AS synchronous_commit,
              current_setting('shared_buffers') AS shared_buffers`,
    )) as [{ version: string; synchronous_commit: string; shared_buffers: string }[], unknown];
    emit({
      bench: 'environment',
      date: new Date().toISOString(),
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      postgres: rows[0].version,
      synchronousCommit: rows[0].synchronous_commit,
      sharedBuffers: rows[0].shared_buffers,
    });
  } finally {
    await sequelize.close();
  }
}

const compare = process.argv.includes('--compare');
buildChildren();
const dialectAt = process.argv.indexOf('--dialect');
const dialect =
  process.argv.find((a) => a.startsWith('--dialect='))?.slice('--dialect='.length) ??
  (dialectAt > 0 ? process.argv[dialectAt + 1] : undefined);
(dialect === 'mariadb'
  ? import('./mariadb.js').then((m) => m.mariadbCompare(process.argv.slice(2)))
  : compare
    ? compareMain(process.argv.slice(2).filter((a) => a !== '--compare'))
    : main()
).catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
