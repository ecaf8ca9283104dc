/**
 * Where a relay's wall time goes per batch, to Redis Streams and to a no-op `deliverBatch`
 * (issue 28): one relay in this process (as bench/redis-streams.ts runs it), its claims,
 * sends and records timed by wrapping the PostgreSQL store's `claim` / `recordOutcomes` and
 * the receiver's `deliverBatch`, beside the CPU of this process (and its event loop's
 * utilisation), of the postgres processes and of the Redis server, per event.
 *
 * `npx tsc -p tsconfig.bench.json && node .bench-build/bench/experiments/redis-timeline.js
 * [events=30000] [rounds=3] [kinds=none,redis]`: rounds interleaved, the order turned each
 * round, one JSON line per drain on stdout.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import {
  createOutbox,
  type DeliveryItem,
  defineOutbox,
  receiver,
  redisStreams,
  silentLogger,
} from '../../src/index.js';
import { PostgresStore } from '../../src/storage/postgres/store.js';
import { dropSchema, emit, newSchemaName, note, openSequelize, Ping, round } from '../common.js';
import { settle } from '../pg.js';
import { seedBacklog } from '../seed.js';
import { listenerPid, postgresCpuByPid, postgresCpuSince } from './proc-cpu.js';

const REDIS_URL = process.env.OUTBOX_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
type Kind = 'none' | 'redis' | 'redis-pipeline';

/** Intervals [start, end] in ms, by what was outstanding. */
const spans: Record<'claim' | 'send' | 'record' | 'batch', [number, number][]> = {
  claim: [],
  send: [],
  record: [],
  batch: [],
};
let tracing = false;

function timed<A extends unknown[], R>(
  what: keyof typeof spans,
  fn: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return function (this: unknown, ...args: A) {
    if (!tracing) return fn.apply(this, args);
    const t0 = performance.now();
    return fn.apply(this, args).finally(() => spans[what].push([t0, performance.now()]));
  };
}

const proto = PostgresStore.prototype as unknown as {
  claim: (...a: unknown[]) => Promise<unknown>;
  recordOutcomes: (...a: unknown[]) => Promise<unknown>;
};
proto.claim = timed('claim', proto.claim);
proto.recordOutcomes = timed('record', proto.recordOutcomes);

/** Total ms covered by the union of the spans. */
function covered(list: readonly [number, number][]): number {
  const s = [...list].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = Number.NEGATIVE_INFINITY;
  let start = 0;
  for (const [a, b] of s) {
    if (a > end) {
      if (end > start) total += end - start;
      start = a;
      end = b;
    } else end = Math.max(end, b);
  }
  if (end > start) total += end - start;
  return total;
}

/** ms during which both a span of `a` and a span of `b` were outstanding. */
function overlap(a: readonly [number, number][], b: readonly [number, number][]): number {
  return covered(a) + covered(b) - covered([...a, ...b]);
}

const mean = (xs: readonly [number, number][]) =>
  xs.length === 0 ? 0 : xs.reduce((s, [a, b]) => s + (b - a), 0) / xs.length;

async function drain(events: number, kind: Kind, stream: string, redisPid: string | undefined) {
  const sequelize = openSequelize(2);
  const schema = newSchemaName();
  const pipelineOnly = kind === 'redis-pipeline' ? new Redis(REDIS_URL) : undefined;
  const base =
    kind === 'redis'
      ? redisStreams({ url: REDIS_URL, stream })
      : pipelineOnly
        ? redisStreams({ client: { pipeline: () => pipelineOnly.pipeline() }, stream })
        : {
            deliverBatch: async (items: readonly unknown[]) =>
              items.map(() => ({ status: 'sent' }) as const),
          };
  const inner = base.deliverBatch!.bind(base) as (
    items: readonly DeliveryItem[],
    o: { signal: AbortSignal },
  ) => Promise<unknown>;
  const deliver = {
    ...base,
    deliverBatch: timed('send', inner),
  } as typeof base;
  const outbox = createOutbox(
    defineOutbox({
      events: { 'bench.Ping': Ping },
      receivers: { to: receiver('bench.Ping', { deliver }) },
    }),
    { sequelize, schema, wakeup: null, logger: silentLogger },
  );
  try {
    await outbox.migrate();
    await seedBacklog(outbox, events);
    await settle(schema);
    for (const list of Object.values(spans)) list.length = 0;
    let delivered = 0;
    const stop = new AbortController();
    outbox.on('relay:delivered', () => {
      if (++delivered === events) stop.abort();
    });
    const pg0 = postgresCpuByPid();
    const redis0 = redisPid ? cpuOf(redisPid) : 0;
    const cpu0 = process.cpuUsage();
    const elu0 = performance.eventLoopUtilization();
    tracing = true;
    const t0 = performance.now();
    await outbox.runRelay({ signal: stop.signal, batchSize: 500, pollIntervalMs: 50 });
    const wall = performance.now() - t0;
    tracing = false;
    const elu = performance.eventLoopUtilization(elu0);
    const cpu = process.cpuUsage(cpu0);
    const pg = postgresCpuSince(pg0);
    const redisCpu = redisPid ? cpuOf(redisPid) - redis0 : 0;
    const us = (ms: number) => round((ms * 1000) / events, 2);
    const perBatch = (ms: number) => round((ms * 500) / events, 2);
    return {
      kind,
      eventsPerSecond: Math.round(events / (wall / 1000)),
      wallUsPerEvent: us(wall),
      cpuUsPerEvent: {
        relay: round((cpu.user + cpu.system) / events, 2),
        postgres: round((pg * 1e6) / events, 2),
        redis: round((redisCpu * 1e6) / events, 2),
      },
      eventLoopUtilization: round(elu.utilization, 3),
      claims: spans.claim.length,
      meanMs: {
        claim: round(mean(spans.claim), 2),
        send: round(mean(spans.send), 2),
        record: round(mean(spans.record), 2),
      },
      // Per 500 events, ms of wall time during which …
      perBatchMs: {
        wall: perBatch(wall),
        claimOutstanding: perBatch(covered(spans.claim)),
        sendOutstanding: perBatch(covered(spans.send)),
        recordOutstanding: perBatch(covered(spans.record)),
        databaseOutstanding: perBatch(covered([...spans.claim, ...spans.record])),
        nothingOutstanding: perBatch(
          wall - covered([...spans.claim, ...spans.record, ...spans.send]),
        ),
        sendWithDatabase: perBatch(overlap(spans.send, [...spans.claim, ...spans.record])),
        claimWithRecord: perBatch(overlap(spans.claim, spans.record)),
      },
    };
  } finally {
    await outbox.close();
    pipelineOnly?.disconnect();
    await dropSchema(sequelize, schema);
    await sequelize.close();
  }
}

function cpuOf(pid: string): number {
  // proc-cpu.ts keeps its own private; the same read.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [eventsArg = '30000', roundsArg = '3', kindsArg = 'none,redis'] = process.argv.slice(2);
  const events = Number(eventsArg);
  const kinds = kindsArg.split(',') as Kind[];
  const redisPid = listenerPid(6379);
  const stream = `bench:timeline:${process.pid}`;
  const redis = new Redis(REDIS_URL);
  try {
    for (const kind of kinds) {
      await drain(5_000, kind, stream, redisPid); // warm
      await redis.del(stream);
    }
    for (let r = 0; r < Number(roundsArg); r++) {
      for (let k = 0; k < kinds.length; k++) {
        const kind = kinds[(k + r) % kinds.length];
        note(`timeline: ${kind}, ${events} events, round ${r + 1}`);
        emit({
          bench: 'redis-timeline',
          round: r + 1,
          ...(await drain(events, kind, stream, redisPid)),
        });
        await redis.del(stream);
      }
    }
  } finally {
    await redis.del(stream);
    await redis.quit();
  }
}
