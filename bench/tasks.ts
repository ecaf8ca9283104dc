/**
 * `site: 'task'` through each task backend (issue 30): a no-op handler receiver declared
 * `site: 'task'`, a relay in this process handing its rows off, and the backend's worker in
 * this process running them through `deliverOne(id, claim)`.
 *
 * - throughput: a backlog of `events` rows (committed before anything runs), then the relay
 *   and the worker started together; the clock stops when the worker has recorded the last
 *   one — hand-off to recorded, events/s;
 * - latency: `latencyEvents` events fired one per transaction at `rate` per second while the relay
 *   (woken in-process) and the worker run; per event, the time from its COMMIT to its
 *   handler's start, p50/p99;
 * - pg-boss's own job latency beside it: `boss.send()` at the same rate, straight to a
 *   pg-boss worker, send → handler start (what the queue costs without the outbox).
 *
 * Needs PostgreSQL (a schema of its own, pg-boss's tables in it) and, for BullMQ, Redis
 * (`OUTBOX_BENCH_REDIS_URL`, else redis://127.0.0.1:6379; a queue name of its own).
 *
 *   npx tsx bench/tasks.ts [pg-boss|bullmq|all] [--events 10000] [--latency-events 2000] [--rate 100]
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { Queue } from 'bullmq';
import PgBoss from 'pg-boss';
import { z } from 'zod';
import {
  bullmqTaskBackend,
  bullmqTaskWorker,
  createOutbox,
  defineOutbox,
  event,
  pgBossTaskBackend,
  pgBossTaskWorker,
  receiver,
  silentLogger,
  type TaskBackend,
  type TaskWorker,
} from '../src/index.js';
import {
  dropSchema,
  emit,
  newSchemaName,
  note,
  nowMs,
  openSequelize,
  PG_URL,
  quantile,
  round,
  sleep,
  wholeNumberOption,
} from './common.js';

const REDIS_URL = new URL(process.env.OUTBOX_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379');
const connection = { host: REDIS_URL.hostname, port: Number(REDIS_URL.port || 6379) };

const Task = event({ schema: z.object({ n: z.number().int() }) });

interface Backend {
  readonly name: 'pg-boss' | 'bullmq';
  readonly backend: TaskBackend;
  startWorker(outbox: ReturnType<typeof createOutbox>, onDone: () => void): Promise<TaskWorker>;
  close(): Promise<void>;
}

async function openBackend(
  name: 'pg-boss' | 'bullmq',
  schema: string,
  queue: string,
): Promise<Backend & { boss?: PgBoss }> {
  if (name === 'pg-boss') {
    const boss = new PgBoss({
      connectionString: PG_URL,
      schema,
      max: 10,
      supervise: false,
      schedule: false,
    });
    boss.on('error', () => {});
    await boss.start();
    return {
      name,
      boss,
      backend: pgBossTaskBackend(boss, { queue }),
      startWorker: (outbox, onDone) =>
        pgBossTaskWorker(outbox, boss, {
          queue,
          batchSize: 50,
          workers: 2,
          pollingIntervalSeconds: 0.5,
          onDelivered: onDone,
        }),
      close: () => boss.stop({ graceful: false, close: true, wait: true }),
    };
  }
  return {
    name,
    backend: bullmqTaskBackend({ queue, connection }),
    startWorker: (outbox, onDone) =>
      bullmqTaskWorker(outbox, { queue, connection, concurrency: 20, onDelivered: onDone }),
    async close() {
      const q = new Queue(queue, { connection });
      await q.obliterate({ force: true }).catch(() => {});
      await q.close();
    },
  };
}

async function benchBackend(
  which: 'pg-boss' | 'bullmq',
  events: number,
  latencyEvents: number,
  rate: number,
) {
  const schema = newSchemaName();
  const sequelize = openSequelize(20);
  await sequelize.query(`CREATE SCHEMA "${schema}"`);
  const queue = `bench-${randomBytes(4).toString('hex')}`;
  const q = await openBackend(which, schema, queue);
  const started = new Map<number, number>();
  const config = defineOutbox({
    events: { 'bench.Task': Task },
    receivers: {
      'bench.task': receiver(Task, {
        site: 'task',
        leaseSeconds: 120,
        handle: (e) => {
          if (!started.has(e.payload.n)) started.set(e.payload.n, nowMs());
        },
      }),
    },
    settings: { batchSize: 200 },
  });
  const outbox = createOutbox(config, {
    sequelize,
    schema,
    logger: silentLogger,
    taskBackend: q.backend,
  });
  await outbox.migrate();
  let done = 0;
  const worker = await q.startWorker(outbox, () => {
    done += 1;
  });
  const stop = new AbortController();
  let relay: Promise<unknown> | undefined;
  try {
    // 1. Throughput: a committed backlog, then the relay.
    for (let from = 0; from < events; from += 1000) {
      await outbox.fireMany(
        Array.from({ length: Math.min(1000, events - from) }, (_, i) => ({
          name: 'bench.Task' as const,
          payload: { n: from + i },
        })),
      );
    }
    const t0 = nowMs();
    relay = outbox.runRelay({ signal: stop.signal, concurrency: 10, pollIntervalMs: 50 });
    while (done < events) await sleep(5);
    const seconds = (nowMs() - t0) / 1000;
    emit({
      bench: 'tasks',
      backend: which,
      figure: 'throughput',
      events,
      seconds: round(seconds),
      eventsPerSecond: Math.round(events / seconds),
    });

    // 2. Latency: one event per transaction at `rate`, commit → handler start.
    const committed = new Map<number, number>();
    const base = events;
    const t1 = nowMs();
    for (let i = 0; i < latencyEvents; i++) {
      const due = t1 + (i * 1000) / rate;
      const wait = due - nowMs();
      if (wait > 1) await sleep(wait);
      const n = base + i;
      await sequelize.transaction((transaction) =>
        outbox.fire('bench.Task', { n }, { transaction }),
      );
      committed.set(n, nowMs());
    }
    const firedFor = (nowMs() - t1) / 1000;
    while (done < events + latencyEvents) await sleep(5);
    const latencies = [...committed].map(([n, at]) => started.get(n)! - at).sort((a, b) => a - b);
    emit({
      bench: 'tasks',
      backend: which,
      figure: 'latency',
      events: latencyEvents,
      rateAsked: rate,
      rateFired: Math.round(latencyEvents / firedFor),
      p50Ms: round(quantile(latencies, 0.5), 2),
      p99Ms: round(quantile(latencies, 0.99), 2),
      maxMs: round(latencies[latencies.length - 1], 2),
    });

    // 3. pg-boss's own job latency at the same rate (send → handler start), for scale.
    if (q.boss) {
      const own = `${queue}-own`;
      await q.boss.createQueue(own);
      const sent = new Map<number, number>();
      const ran = new Map<number, number>();
      const id = await q.boss.work<{ n: number }>(
        own,
        { batchSize: 50, pollingIntervalSeconds: 0.5 },
        async (jobs) => {
          for (const job of jobs) ran.set(job.data.n, nowMs());
        },
      );
      const jobs = latencyEvents;
      const t2 = nowMs();
      for (let i = 0; i < jobs; i++) {
        const wait = t2 + (i * 1000) / rate - nowMs();
        if (wait > 1) await sleep(wait);
        await q.boss.send(own, { n: i });
        sent.set(i, nowMs());
      }
      while (ran.size < jobs) await sleep(5);
      await q.boss.offWork({ id } as never);
      const own50 = [...sent].map(([n, at]) => ran.get(n)! - at).sort((a, b) => a - b);
      emit({
        bench: 'tasks',
        backend: 'pg-boss alone',
        figure: 'latency',
        events: jobs,
        rateAsked: rate,
        p50Ms: round(quantile(own50, 0.5), 2),
        p99Ms: round(quantile(own50, 0.99), 2),
      });
    }
  } finally {
    stop.abort();
    await relay?.catch(() => {});
    await worker.stop();
    await outbox.close();
    await q.close();
    await dropSchema(sequelize, schema);
    await sequelize.close();
  }
}

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? fallback : wholeNumberOption(name, args[i + 1], 1);
};
const which = args.find((a) => !a.startsWith('--') && !/^\d+$/.test(a)) ?? 'all';
const events = option('events', 10_000);
const latencyEvents = option('latency-events', 2_000);
const rate = option('rate', 100);
note(
  `bench/tasks: ${events} rows per backend, latency at ${rate} ev/s; load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
for (const backend of which === 'all'
  ? (['pg-boss', 'bullmq'] as const)
  : [which as 'pg-boss' | 'bullmq']) {
  await benchBackend(backend, events, latencyEvents, rate);
}
process.exit(0);
