/**
 * The peers' figures: graphile-worker 0.18 and pg-boss 10, each in a fresh schema of its
 * own (`bench_<hex>`, their `schema` option) that is dropped afterwards, also on failure.
 *
 * - drain: seed `events` no-op jobs (graphile-worker's `addJobs`, pg-boss's `insert`, in
 *   chunks of 1,000, not timed), VACUUM (ANALYZE) and CHECKPOINT, start the worker process
 *   (`worker.ts`) and wait until it connected, say `go`, and time until every task ran
 *   (its progress) and the database agrees that every job is done (graphile-worker
 *   deletes a finished job; pg-boss marks it `completed`, written after the task returned
 *   and not awaited by its loop), polled every 5 ms. events/s = events / that time.
 * - latency: `preparePeer` and `startPeerWorkers` for `../latency.ts`.
 *
 * The settings (`GRAPHILE_DRAINS`, `PGBOSS_DRAINS`): graphile-worker's defaults (1 worker,
 * no local queue, completions one by one), 10 workers, and its batching (10 workers, a
 * local queue of 500 jobs fetched at once, completions batched); pg-boss's `work()` with
 * batches of 500, ten `work()` loops (the relay's batch and concurrency; its loop fetches
 * a batch, runs it, marks it complete without waiting, then sleeps out the rest of its
 * 0.5 s minimum poll, so one loop of 500 tops out at ~1,000 jobs/s, 20,000 measured at
 * 12,000/s with ten; `batchSize` 1, its default, is a job per fetch).
 */
import { fileURLToPath } from 'node:url';
import { emit, newSchemaName, note, PG_URL, round } from '../common.js';
import { drainTracker, timeDrain } from '../drain.js';
import { connectPg, dropSchemaPg, settle } from '../pg.js';
import type { ChildMessage, PeerSystem, PeerWorkerOptions } from '../protocol.js';
import { type RelayGroup, startWorkers } from '../relays.js';
import { ensurePeers } from './install.js';
import { loadGraphile, loadPgBoss, quietGraphileLogger } from './load.js';

const PEER_WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** One setting of a peer's worker. */
export interface PeerLatencySetting {
  readonly setting: string;
  readonly concurrency: number;
  readonly batchSize: number;
  readonly completeJobBatchDelay?: number;
  readonly pollIntervalMs: number;
}

export const GRAPHILE_DRAINS: readonly PeerLatencySetting[] = [
  { setting: 'default', concurrency: 1, batchSize: -1, pollIntervalMs: 2000 },
  { setting: 'c10', concurrency: 10, batchSize: -1, pollIntervalMs: 2000 },
  {
    setting: 'batched',
    concurrency: 10,
    batchSize: 500,
    completeJobBatchDelay: 0,
    pollIntervalMs: 2000,
  },
];

export const PGBOSS_DRAINS: readonly PeerLatencySetting[] = [
  { setting: 'batch500x10', concurrency: 10, batchSize: 500, pollIntervalMs: 500 },
];

/** Create the peer's tables in `schema` and seed `events` no-op jobs; the seconds it took. */
export async function preparePeer(
  system: PeerSystem,
  schema: string,
  events: number,
): Promise<number> {
  ensurePeers();
  const started = performance.now();
  const chunk = (from: number) =>
    Array.from({ length: Math.min(1000, events - from) }, (_, i) => ({
      n: from + i,
      note: 'backlog',
    }));
  if (system === 'graphile') {
    const graphile = await loadGraphile();
    const utils = await graphile.makeWorkerUtils({
      connectionString: PG_URL,
      schema,
      logger: quietGraphileLogger(graphile),
    });
    try {
      await utils.migrate();
      for (let from = 0; from < events; from += 1000)
        await utils.addJobs(chunk(from).map((payload) => ({ identifier: 'ping', payload })));
    } finally {
      await utils.release();
    }
  } else {
    const PgBoss = await loadPgBoss();
    const boss = new PgBoss({
      connectionString: PG_URL,
      schema,
      max: 2,
      supervise: false,
      schedule: false,
      migrate: true,
    });
    boss.on('error', (error) => process.stderr.write(`pg-boss: ${String(error)}\n`));
    await boss.start();
    try {
      await boss.createQueue('ping');
      for (let from = 0; from < events; from += 1000)
        await boss.insert(chunk(from).map((data) => ({ name: 'ping', data })));
    } finally {
      await boss.stop({ graceful: false, wait: true });
    }
  }
  return (performance.now() - started) / 1000;
}

/** Start one worker process of the peer with this setting; resolves once it is `ready`. */
export function startPeerWorkers(
  system: PeerSystem,
  schema: string,
  setting: PeerLatencySetting & { readonly probe: boolean },
  onMessage: (message: ChildMessage, index: number) => void,
  name = 'bench-peer',
): Promise<RelayGroup> {
  return startWorkers<PeerWorkerOptions>(
    PEER_WORKER,
    1,
    (workerId) => ({ system, schema, workerId, ...setting }),
    onMessage,
    name,
  );
}

/** Counts the jobs the peer has not finished (graphile-worker deletes finished jobs). */
function unfinishedSql(system: PeerSystem, schema: string): string {
  return system === 'graphile'
    ? `SELECT count(*)::int AS n FROM "${schema}"._private_jobs`
    : `SELECT count(*)::int AS n FROM "${schema}".job WHERE name = 'ping' AND state <> 'completed'`;
}

export interface PeerDrainOptions {
  readonly system: PeerSystem;
  readonly setting: PeerLatencySetting;
  readonly events: number;
}

export async function benchPeerDrain(o: PeerDrainOptions): Promise<Record<string, unknown>> {
  const schema = newSchemaName();
  const label = `${o.system} ${o.setting.setting}`;
  try {
    const seedSeconds = await preparePeer(o.system, schema, o.events);
    const settleSeconds = await settle(schema);
    const tracker = drainTracker(o.events);
    const group = await startPeerWorkers(
      o.system,
      schema,
      { ...o.setting, probe: false },
      tracker.onMessage,
    );
    const confirmer = await connectPg('bench-peer-confirm');
    const unfinished = async () =>
      (await confirmer.query<{ n: number }>(unfinishedSql(o.system, schema))).rows[0].n;
    let seconds: number;
    try {
      ({ seconds } = await timeDrain(
        group,
        tracker,
        label,
        async () => (await unfinished()) === 0,
      ));
      const left = await unfinished();
      if (left !== 0) throw new Error(`drain ${label}: ${left} jobs left`);
    } finally {
      await confirmer.end();
    }
    const figure = {
      bench: 'drain',
      system: o.system,
      setting: o.setting.setting,
      receiver: 'noop-task',
      relays: 1,
      events: o.events,
      concurrency: o.setting.concurrency,
      batchSize: o.setting.batchSize,
      ...(o.setting.completeJobBatchDelay !== undefined
        ? { completeJobBatchDelay: o.setting.completeJobBatchDelay }
        : {}),
      seconds: round(seconds),
      eventsPerSecond: Math.round(o.events / seconds),
      seedSeconds: round(seedSeconds, 2),
      settleSeconds: round(settleSeconds, 2),
    };
    emit(figure);
    return figure;
  } finally {
    await dropSchemaPg(schema);
    note(`drain ${label}: schema ${schema} dropped`);
  }
}
