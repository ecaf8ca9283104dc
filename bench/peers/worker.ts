/**
 * A peer's worker in its own process, like each outboxkit relay: graphile-worker's
 * `run()` or pg-boss's `work()` with a task that does nothing but count (and, for the
 * latency runs, note when it started on job n). argv[2] is a {@link PeerWorkerOptions}
 * JSON. Drains: connect (the pool warmed up), say `ready`, start on `go`. Latency runs
 * (`probe`): start at once, then say `ready`. Either runs until `stop`.
 *
 * The packages are loaded from bench/peers/node_modules (`load.ts`); graphile-worker gets
 * a node-postgres pool made here (warmed up before `ready`, so the timed part does not
 * pay for connecting), pg-boss makes its own in `start()`.
 */
import { parentOrders, probeReporter, progressReporter, runChild, send } from '../child.js';
import { nowMs, PG_URL } from '../common.js';
import { PgPool } from '../pg.js';
import type { PeerWorkerOptions } from '../protocol.js';
import { loadGraphile, loadPgBoss, quietGraphileLogger } from './load.js';

async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2] ?? '{}') as PeerWorkerOptions;
  const progress = progressReporter(nowMs);
  const starts = probeReporter();
  const onJob = (payload: unknown) => {
    if (o.probe) starts.add((payload as { n: number }).n, nowMs());
    progress.add(1);
  };
  const { go, stopped } = parentOrders();
  const stop = new Promise<void>((resolve) => stopped.addEventListener('abort', () => resolve()));

  if (o.system === 'graphile') {
    const graphile = await loadGraphile();
    const pool = new PgPool({
      connectionString: PG_URL,
      max: Math.max(10, o.concurrency + 2),
      application_name: 'bench-graphile',
    });
    // graphile-worker reports errors itself, but wants the pool and its clients handled.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    const warm = await Promise.all(Array.from({ length: o.concurrency + 1 }, () => pool.connect()));
    for (const c of warm) c.release();
    if (!o.probe) {
      send({ type: 'ready' });
      await go;
    }
    const worker: { localQueue?: { size: number }; completeJobBatchDelay?: number } = {};
    if (o.batchSize > 1) worker.localQueue = { size: o.batchSize };
    if (o.completeJobBatchDelay !== undefined && o.completeJobBatchDelay >= 0)
      worker.completeJobBatchDelay = o.completeJobBatchDelay;
    const runner = await graphile.run({
      pgPool: pool,
      schema: o.schema,
      concurrency: o.concurrency,
      pollInterval: o.pollIntervalMs,
      noHandleSignals: true,
      crontab: '',
      logger: quietGraphileLogger(graphile),
      taskList: {
        ping: async (payload) => {
          onJob(payload);
        },
      },
      preset: { worker },
    });
    if (o.probe) send({ type: 'ready' });
    await stop;
    await runner.stop();
    await pool.end();
  } else {
    const PgBoss = await loadPgBoss();
    const boss = new PgBoss({
      connectionString: PG_URL,
      schema: o.schema,
      max: o.concurrency + 2,
      supervise: false,
      schedule: false,
      migrate: false,
    });
    boss.on('error', (error) => process.stderr.write(`pg-boss: ${String(error)}\n`));
    await boss.start();
    if (!o.probe) {
      send({ type: 'ready' });
      await go;
    }
    for (let i = 0; i < o.concurrency; i++) {
      await boss.work(
        'ping',
        { batchSize: o.batchSize, pollingIntervalSeconds: o.pollIntervalMs / 1000 },
        async (jobs) => {
          for (const job of jobs) onJob(job.data);
        },
      );
    }
    if (o.probe) send({ type: 'ready' });
    await stop;
    await boss.stop({ graceful: true, wait: true });
  }
  starts.flush();
  send({ type: 'done', report: {}, delivered: progress.delivered });
}

runChild(main);
