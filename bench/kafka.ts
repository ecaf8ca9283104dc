/**
 * Relay throughput to Kafka with 1 and 4 relays against kafkajs's own `sendBatch` loop (the
 * limit), in the same run, on PostgreSQL and Kafka: `OUTBOX_BENCH_KAFKA_BROKERS`, else
 * `OUTBOX_TEST_KAFKA_BROKERS`, else librdkafka's mock cluster started here from kcat (as
 * the tests do; it speaks the real protocol but is no broker's performance).
 *
 *   npx tsx bench/kafka.ts [--events 20000] [--batch-size 500] [--relays 1,4] [--keys 500]
 *
 * The raw loop sends the same records (key, JSON value, headers) in batches of `batch-size`,
 * one `sendBatch` with `acks: -1` per batch, awaiting each before the next — what the
 * transport does, minus the outbox. Each relay run fires `events` events (not timed), then
 * times the relays delivering them through `kafka()`; a last run times one relay to a no-op
 * transport, the relay's own ceiling on this machine. One JSON line per figure.
 */
import { parseArgs } from 'node:util';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { z } from 'zod';
import {
  AnyEvent,
  createOutbox,
  defineOutbox,
  event,
  getBody,
  getHeaders,
  kafka,
  type OutboxDelivery,
  receiver,
  silentLogger,
} from '../src/index.js';
import { runtimeOf } from '../src/runtime.js';
import { kafkaForTests } from '../test/kafka-mock.js';
import { conformanceEvent } from '../testing/conformance/index.js';
import { postgresTestSchema } from '../testing/databases.js';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    'batch-size': { type: 'string', default: '500' },
    relays: { type: 'string', default: '1,4' },
    keys: { type: 'string', default: '500' },
  },
});
const events = Number(values.events);
const batchSize = Number(values['batch-size']);
const relayCounts = values.relays.split(',').map(Number);
/** How many ordering keys the events spread over (a claim holds one event per key). */
const keys = Number(values.keys);
const suffix = Math.random().toString(36).slice(2, 8);

if (!process.env.OUTBOX_BENCH_KAFKA_BROKERS && process.env.OUTBOX_TEST_KAFKA_BROKERS)
  process.env.OUTBOX_BENCH_KAFKA_BROKERS = process.env.OUTBOX_TEST_KAFKA_BROKERS;
if (process.env.OUTBOX_BENCH_KAFKA_BROKERS)
  process.env.OUTBOX_TEST_KAFKA_BROKERS = process.env.OUTBOX_BENCH_KAFKA_BROKERS;
const cluster = await kafkaForTests();
if (!cluster.brokers) throw new Error(`no Kafka for the bench: ${cluster.reason}`);
const brokers = cluster.brokers.split(',');
const mock = !process.env.OUTBOX_BENCH_KAFKA_BROKERS;

async function rawLoop(topic: string): Promise<number> {
  const client = new Kafka({ clientId: 'bench-raw', brokers, logLevel: logLevel.NOTHING });
  const producer = client.producer({
    allowAutoTopicCreation: true,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  // The topic exists (auto-created) before the clock starts, as it does for the relays.
  await producer.send({ topic, acks: -1, messages: [{ value: 'warm-up' }] });
  const started = performance.now();
  for (let sent = 0; sent < events; sent += batchSize) {
    const messages = Array.from({ length: Math.min(batchSize, events - sent) }, (_, i) => {
      const e = conformanceEvent({ name: 'bench.Placed', orderingKey: `k-${i}` });
      return { key: e.orderingKey, value: getBody(e), headers: getHeaders(e) };
    });
    await producer.sendBatch({ acks: -1, topicMessages: [{ topic, messages }] });
  }
  const seconds = (performance.now() - started) / 1000;
  await producer.disconnect();
  return events / seconds;
}

/** A transport that sends nothing: the relay's own ceiling (claim + record on PostgreSQL). */
const noop: OutboxDelivery = {
  name: 'noop',
  async deliverBatch(items) {
    return items.map(() => ({ status: 'sent' as const }));
  },
};

async function relayRun(relays: number, topic: string | null): Promise<number> {
  const db = await postgresTestSchema();
  try {
    const Placed = event({ schema: z.object({ n: z.number(), note: z.string() }) });
    const config = defineOutbox({
      events: { 'bench.Placed': Placed },
      receivers: {
        'bench.bus': receiver(AnyEvent, {
          deliver: topic === null ? noop : kafka({ brokers, topic }),
        }),
      },
    });
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      wakeup: null,
      logger: silentLogger,
    });
    await outbox.migrate();
    for (let n = 0; n < events; n += 1000)
      await outbox.fireMany(
        Array.from({ length: Math.min(1000, events - n) }, (_, i) => ({
          name: 'bench.Placed' as const,
          payload: { n: n + i, note: 'an order was placed' },
          orderingKey: `k-${(n + i) % keys}`,
        })),
      );
    const stop = new AbortController();
    const started = performance.now();
    const running = Array.from({ length: relays }, (_, i) =>
      outbox.runRelay({
        workerId: `bench-${i}`,
        signal: stop.signal,
        batchSize,
        pollIntervalMs: 5,
      }),
    );
    const store = runtimeOf(outbox).store;
    for (;;) {
      const counts = await store.countDeliveries();
      if (counts.succeeded >= events) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    stop.abort();
    await Promise.allSettled(running);
    await outbox.close();
    return events / seconds;
  } finally {
    await db.cleanup();
  }
}

try {
  const raw = await rawLoop(`bench-raw-${suffix}`);
  const line = (figure: string, perSecond: number, extra: Record<string, unknown> = {}) =>
    console.log(
      JSON.stringify({
        figure,
        events,
        batchSize,
        mock,
        ...extra,
        perSecond: Math.round(perSecond),
      }),
    );
  line('kafka raw kafkajs sendBatch loop', raw);
  for (const relays of relayCounts) {
    const relay = await relayRun(relays, `bench-relay-${relays}-${suffix}`);
    line('kafka relay (PostgreSQL → kafka())', relay, { relays });
    console.log(
      JSON.stringify({
        figure: 'kafka relay / raw',
        relays,
        ratio: Number((relay / raw).toFixed(2)),
      }),
    );
  }
  // The same relay to a transport that sends nothing: what the relay itself can do here,
  // so a low ratio reads as the relay's (PostgreSQL's) limit or the transport's.
  line("relay to a no-op deliverBatch (the relay's own ceiling)", await relayRun(1, null), {
    relays: 1,
  });
} finally {
  cluster.stop();
}
