/**
 * Relay throughput to Redis Streams against the limit: ioredis's own `XADD` pipeline loop,
 * in the same run, writing the same entries (`redisStreamFields`) in the same batch sizes.
 *
 * outboxkit: a backlog of `events` bench.Ping events (seeded, settled, not timed) drained by
 * one relay in this process (`runRelay`, `batchSize`, no wakeup) to `redisStreams()`; the
 * clock stops when the last `relay:delivered` arrives, so every outcome is recorded.
 * `outboxkit-pipeline`: the same relay with the transport sending by pipeline (its form on a
 * cluster client, and the only form before issue 28), for the A/B in one run. Each relay
 * line carries `clientCpuUsPerEvent`: this process's CPU (relay and transport) per event.
 * raw: the same number of entries, one pipeline of `batchSize` `XADD`s after the other, each
 * awaited — what the relay sends, without the database.
 *
 * Needs Redis (`OUTBOX_BENCH_REDIS_URL`, else redis://127.0.0.1:6379) besides PostgreSQL.
 * Each run writes streams of its own (`bench:<hex>:…`) and deletes them afterwards.
 */
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { v7 as uuidv7 } from 'uuid';
import {
  createOutbox,
  defineOutbox,
  type OutboxEvent,
  receiver,
  redisStreamFields,
  redisStreams,
  silentLogger,
} from '../src/index.js';
import { dropSchema, emit, newSchemaName, note, openSequelize, Ping, round } from './common.js';
import { settle } from './pg.js';
import { seedBacklog } from './seed.js';

const SENT = { status: 'sent' } as const;

const REDIS_URL = process.env.OUTBOX_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface RedisStreamsBenchOptions {
  readonly events: number;
  readonly batchSize: number;
  /** Relay counts to time, each in this process (default [1]). */
  readonly relays?: readonly number[];
  /** Interleaved rounds of the three relay drains (default 1); ratios of the medians. */
  readonly rounds?: number;
}

export async function benchRedisStreams(o: RedisStreamsBenchOptions): Promise<void> {
  const prefix = `bench:${randomBytes(5).toString('hex')}`;
  const redis = new Redis(REDIS_URL);
  const line = (system: string, relays: number, seconds: number, extra = {}) =>
    emit({
      bench: 'redis-streams',
      system,
      relays,
      events: o.events,
      batchSize: o.batchSize,
      seconds: round(seconds),
      eventsPerSecond: Math.round(o.events / seconds),
      ...extra,
    });
  const kinds = ['redis', 'redis-pipeline', 'none'] as const;
  const system = {
    redis: 'outboxkit',
    'redis-pipeline': 'outboxkit-pipeline',
    none: 'outboxkit-noop-deliver-batch',
  } as const;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  try {
    const raw = await rawLoop(redis, `${prefix}:raw`, o);
    line('raw-ioredis', 0, raw);
    for (const relays of o.relays ?? [1]) {
      // Warm this process's relay and both Redis forms first: the first drain in a
      // process pays for compiling the relay's code, which would favour whichever went later.
      for (const kind of kinds)
        await relayDrain(
          `${prefix}:relay`,
          { ...o, events: Math.min(o.events, 5_000) },
          relays,
          kind,
        );
      await redis.del(`${prefix}:relay`);
      // Interleaved rounds, the order turned each round, medians reported.
      const taken = {
        redis: [] as number[],
        'redis-pipeline': [] as number[],
        none: [] as number[],
      };
      for (let r = 0; r < (o.rounds ?? 1); r++) {
        for (let k = 0; k < kinds.length; k++) {
          const kind = kinds[(k + r) % kinds.length];
          const drain = await relayDrain(`${prefix}:relay`, o, relays, kind);
          taken[kind].push(drain.seconds);
          // `clientCpuUsPerEvent`: this process's CPU (the relay and the transport) per event.
          line(system[kind], relays, drain.seconds, {
            round: r + 1,
            clientCpuUsPerEvent: drain.cpuUsPerEvent,
          });
          await redis.del(`${prefix}:relay`);
        }
      }
      const [script, piped, ceiling] = kinds.map((kind) => median(taken[kind]));
      emit({
        bench: 'redis-streams',
        relays,
        rounds: o.rounds ?? 1,
        ratio: {
          outboxkitVsRaw: round(raw / script),
          noopCeilingVsRaw: round(raw / ceiling),
          outboxkitVsNoopCeiling: round(ceiling / script),
          pipelineVsNoopCeiling: round(ceiling / piped),
        },
        events: o.events,
        batchSize: o.batchSize,
      });
    }
  } finally {
    await redis.del(`${prefix}:raw`, `${prefix}:relay`);
    await redis.quit();
  }
}

/** The limit: `events` entries through ioredis pipelines of `batchSize`, one after the other. */
async function rawLoop(redis: Redis, stream: string, o: RedisStreamsBenchOptions) {
  note(`redis-streams: raw ioredis XADD pipelines, ${o.events} entries …`);
  const at = new Date();
  const events: OutboxEvent[] = Array.from({ length: o.events }, (_, n) => ({
    id: uuidv7(),
    sequence: String(n + 1),
    name: 'bench.Ping',
    version: 1,
    payload: { n, note: 'backlog' },
    headers: {},
    orderingKey: null,
    idempotencyKey: null,
    occurredAt: at,
    recordedAt: at,
    actor: null,
    correlationId: null,
    causedBy: null,
  }));
  await redis.ping();
  const started = performance.now();
  for (let from = 0; from < events.length; from += o.batchSize) {
    const pipeline = redis.pipeline();
    for (const e of events.slice(from, from + o.batchSize))
      pipeline.xadd(stream, '*', ...redisStreamFields(e));
    const replies = await pipeline.exec();
    if (replies?.some(([error]) => error)) throw new Error('raw XADD failed');
  }
  const seconds = (performance.now() - started) / 1000;
  if ((await redis.xlen(stream)) !== o.events) throw new Error('raw loop lost entries');
  return seconds;
}

/** `relays` relays draining a backlog of `events` to `redisStreams()` (or to nothing). */
async function relayDrain(
  stream: string,
  o: RedisStreamsBenchOptions,
  relays: number,
  to: 'redis' | 'redis-pipeline' | 'none',
) {
  const sequelize = openSequelize(2 * relays);
  const schema = newSchemaName();
  const pipelineOnly = to === 'redis-pipeline' ? new Redis(REDIS_URL) : undefined;
  const deliver =
    to === 'redis'
      ? redisStreams({ url: REDIS_URL, stream })
      : pipelineOnly
        ? redisStreams({ client: { pipeline: () => pipelineOnly.pipeline() }, stream })
        : { deliverBatch: async (items: readonly unknown[]) => items.map(() => SENT) };
  const config = defineOutbox({
    events: { 'bench.Ping': Ping },
    receivers: { toRedis: receiver('bench.Ping', { deliver }) },
  });
  const outbox = createOutbox(config, { sequelize, schema, wakeup: null, logger: silentLogger });
  try {
    await outbox.migrate();
    const seedSeconds = await seedBacklog(outbox, o.events);
    await settle(schema);
    note(
      `redis-streams: ${relays} relay(s) to ${to === 'none' ? 'a no-op deliverBatch' : `redisStreams() (${to})`}, ${o.events} events …`,
    );
    let delivered = 0;
    const stop = new AbortController();
    outbox.on('relay:delivered', () => {
      delivered += 1;
      if (delivered === o.events) stop.abort();
    });
    const cpu = process.cpuUsage();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: relays }, () =>
        outbox.runRelay({ signal: stop.signal, batchSize: o.batchSize, pollIntervalMs: 50 }),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    const counts = await outbox.countDeliveries();
    if (counts.succeeded !== o.events)
      throw new Error(`relay to Redis did not finish: ${JSON.stringify(counts)}`);
    return {
      seconds,
      seedSeconds: round(seedSeconds, 2),
      cpuUsPerEvent: round((used.user + used.system) / o.events, 2),
    };
  } finally {
    await outbox.close();
    pipelineOnly?.disconnect();
    await dropSchema(sequelize, schema);
    await sequelize.close();
  }
}

/**
 * Run on tsc's build, as a relay ships (`bench/build.ts` says why tsx's own build costs the
 * relay's hot path): `npx tsc -p tsconfig.bench.json && node
 * .bench-build/bench/redis-streams.js [events=30000] [rounds=3] [relays=1]`.
 */
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [events = '30000', rounds = '3', relays = '1'] = process.argv.slice(2);
  await benchRedisStreams({
    events: Number(events),
    batchSize: 500,
    rounds: Number(rounds),
    relays: relays.split(',').map(Number),
  });
}
