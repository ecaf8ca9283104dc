/**
 * The wakeups a latency run can use (`--wakeups`), built the same way in the relay and in
 * the producers: each names its channel (or exchange) after the run's schema, so other runs
 * on the same servers never wake it.
 *
 * - `listen-notify`: PostgreSQL's, the NOTIFY queued by `fire()`'s own INSERT;
 * - `redis`: `redisWakeup()`, a PUBLISH after commit (Redis on 127.0.0.1:6379);
 * - `rabbitmq`: `rabbitmqWakeup()`, a fanout exchange (RabbitMQ on 127.0.0.1:5672).
 */
import {
  listenNotifyWakeup,
  type OutboxWakeup,
  rabbitmqWakeup,
  redisWakeup,
} from '../src/index.js';

export const BENCH_WAKEUPS = ['listen-notify', 'redis', 'rabbitmq'] as const;
export type BenchWakeup = (typeof BENCH_WAKEUPS)[number];

/** Where the broker wakeups connect: the local servers, or these environment variables. */
const REDIS_URL = process.env.OUTBOX_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const AMQP_URL = process.env.OUTBOX_BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** The wakeup `kind` on `channel`. */
export function benchWakeup(kind: BenchWakeup, channel: string): OutboxWakeup {
  switch (kind) {
    case 'listen-notify':
      return listenNotifyWakeup({ channel });
    case 'redis':
      return redisWakeup({ url: REDIS_URL, channel });
    case 'rabbitmq':
      return rabbitmqWakeup({ url: AMQP_URL, exchange: channel });
  }
}

/** Check a `--wakeups` list. */
export function parseBenchWakeups(text: string): BenchWakeup[] {
  const kinds = text.split(',');
  for (const k of kinds)
    if (!(BENCH_WAKEUPS as readonly string[]).includes(k))
      throw new Error(`--wakeups: unknown wakeup ${k} (${BENCH_WAKEUPS.join(', ')})`);
  return kinds as BenchWakeup[];
}
