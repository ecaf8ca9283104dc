/**
 * Relay throughput to Redis Streams against the limit: ioredis's own `XADD` pipeline loop,
 * in the same run, writing the same entries (`redisStreamFields`) in the same batch sizes.
 *
 * outboxkit: a backlog of `events` bench.Ping events (seeded, settled, not timed) drained by
 * one relay in this process (`runRelay`, `batchSize`, no wakeup) to `redisStreams()`; the
 * clock stops when the last `relay:delivered` arrives, so every outcome is recorded.
 * raw: the same number of entries, one pipeline of `batchSize` `XADD`s after the other, each
 * awaited — what the relay sends, without the database.
 *
 * Needs Redis (`OUTBOX_BENCH_REDIS_URL`, else redis://127.0.0.1:6379) besides PostgreSQL.
 * Each run writes streams of its own (`bench:<hex>:…`) and deletes them afterwards.
 */
import { randomBytes } from 'node:crypto';
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
  try {
    const raw = await rawLoop(redis, `${prefix}:raw`, o);
    line('raw-ioredis', 0, raw);
    for (const relays of o.relays ?? [1]) {
      const relay = await relayDrain(`${prefix}:relay`, o, relays, 'redis');
      line('outboxkit', relays, relay.seconds, { seedSeconds: relay.seedSeconds });
      // The same drain with a deliverBatch that sends nothing: the database's own ceiling
      // for this relay count, which the relay to Redis cannot pass.
      const ceiling = await relayDrain(`${prefix}:relay`, o, relays, 'none');
      line('outboxkit-noop-deliver-batch', relays, ceiling.seconds);
      emit({
        bench: 'redis-streams',
        relays,
        ratio: {
          outboxkitVsRaw: round(raw / relay.seconds),
          noopCeilingVsRaw: round(raw / ceiling.seconds),
          outboxkitVsNoopCeiling: round(ceiling.seconds / relay.seconds),
        },
        events: o.events,
        batchSize: o.batchSize,
      });
      await redis.del(`${prefix}:relay`);
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
  to: 'redis' | 'none',
) {
  const sequelize = openSequelize(2 * relays);
  const schema = newSchemaName();
  const deliver =
    to === 'redis'
      ? redisStreams({ url: REDIS_URL, stream })
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
      `redis-streams: ${relays} relay(s) to ${to === 'redis' ? 'redisStreams()' : 'a no-op deliverBatch'}, ${o.events} events …`,
    );
    let delivered = 0;
    const stop = new AbortController();
    outbox.on('relay:delivered', () => {
      delivered += 1;
      if (delivered === o.events) stop.abort();
    });
    const started = performance.now();
    await Promise.all(
      Array.from({ length: relays }, () =>
        outbox.runRelay({ signal: stop.signal, batchSize: o.batchSize, pollIntervalMs: 50 }),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    const counts = await outbox.countDeliveries();
    if (counts.succeeded !== o.events)
      throw new Error(`relay to Redis did not finish: ${JSON.stringify(counts)}`);
    return { seconds, seedSeconds: round(seedSeconds, 2) };
  } finally {
    await outbox.close();
    await dropSchema(sequelize, schema);
    await sequelize.close();
  }
}
