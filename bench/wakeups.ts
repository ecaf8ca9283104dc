/**
 * The wakeups a latency run can use (`--wakeups`), built the same way in the relay and in
 * the producers: each names its channel (or exchange) after the run's schema, so other runs
 * on the same servers never wake it.
 *
 * - `listen-notify`: PostgreSQL's, the NOTIFY queued by `fire()`'s own INSERT;
 * - `redis`: `redisWakeup()`, a PUBLISH after commit (Redis on 127.0.0.1:6379);
 * - `rabbitmq`: `rabbitmqWakeup()`, a fanout exchange (RabbitMQ on 127.0.0.1:5672);
 * - `kafka`: `kafkaWakeup()`, a signals topic (`OUTBOX_BENCH_KAFKA_BROKERS`; the latency
 *   run starts librdkafka's mock cluster from kcat when it is unset, as the tests do — it
 *   speaks the real protocol, but its timings are no broker's).
 */
import {
  kafkaWakeup,
  listenNotifyWakeup,
  type OutboxWakeup,
  rabbitmqWakeup,
  redisWakeup,
} from '../src/index.js';

export const BENCH_WAKEUPS = ['listen-notify', 'redis', 'rabbitmq', 'kafka'] as const;
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
    case 'kafka': {
      const brokers = process.env.OUTBOX_BENCH_KAFKA_BROKERS;
      if (!brokers) throw new Error('the kafka wakeup needs OUTBOX_BENCH_KAFKA_BROKERS');
      // The mock cluster holds every fetch for its whole maxWaitTimeInMs, even one that
      // data arrived for, so a signal waits up to maxWaitMs there (a broker answers a fetch
      // as soon as a record arrives): a short wait keeps the mock's figure meaningful.
      const maxWaitMs = Number(process.env.OUTBOX_BENCH_KAFKA_MAX_WAIT_MS ?? 25);
      return kafkaWakeup({ brokers: brokers.split(','), topic: channel, maxWaitMs });
    }
  }
}

/**
 * Make sure a `kafka` run has brokers: OUTBOX_BENCH_KAFKA_BROKERS, else the kcat mock
 * cluster started for this process (its address exported for the child processes).
 * Returns how to stop what was started.
 */
export async function ensureBenchKafka(): Promise<() => void> {
  if (process.env.OUTBOX_BENCH_KAFKA_BROKERS) return () => {};
  const { kafkaForTests } = await import('../test/kafka-mock.js');
  const cluster = await kafkaForTests();
  if (!cluster.brokers) throw new Error(`no Kafka for the bench: ${cluster.reason}`);
  process.env.OUTBOX_BENCH_KAFKA_BROKERS = cluster.brokers;
  return () => cluster.stop();
}

/** Check a `--wakeups` list. */
export function parseBenchWakeups(text: string): BenchWakeup[] {
  const kinds = text.split(',');
  for (const k of kinds)
    if (!(BENCH_WAKEUPS as readonly string[]).includes(k))
      throw new Error(`--wakeups: unknown wakeup ${k} (${BENCH_WAKEUPS.join(', ')})`);
  return kinds as BenchWakeup[];
}
