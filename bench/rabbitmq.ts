/**
 * Relay throughput to RabbitMQ against amqplib's own confirm-channel publish loop (the
 * limit), in the same run, on PostgreSQL and the local broker.
 *
 *   npx tsx bench/rabbitmq.ts [--events 20000] [--batch-size 500] [--relays 1] [--keys 500]
 *
 * The raw loop publishes the same bodies and headers in batches of `batch-size`, each
 * message with its confirm callback, and awaits each batch's confirms before the next — what
 * the transport does, minus the outbox. The relay run fires `events` events (not timed),
 * then times `relays` relays delivering them through `rabbitmq()`. One JSON line per figure.
 */
import { parseArgs } from 'node:util';
import amqp from 'amqplib';
import { z } from 'zod';
import {
  AnyEvent,
  createOutbox,
  defineOutbox,
  event,
  getBody,
  getHeaders,
  rabbitmq,
  receiver,
  silentLogger,
} from '../src/index.js';
import { runtimeOf } from '../src/runtime.js';
import { conformanceEvent } from '../testing/conformance/index.js';
import { postgresTestSchema } from '../testing/databases.js';

const URL = process.env.OUTBOX_TEST_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    'batch-size': { type: 'string', default: '500' },
    relays: { type: 'string', default: '1' },
    keys: { type: 'string', default: '500' },
  },
});
const events = Number(values.events);
const batchSize = Number(values['batch-size']);
const relays = Number(values.relays);
/** How many ordering keys the events spread over (a claim holds one event per key). */
const keys = Number(values.keys);
const suffix = Math.random().toString(36).slice(2, 8);
const exchange = `bench.x.${suffix}`;
const queue = `bench.q.${suffix}`;

const admin = await amqp.connect(URL);
const ach = await admin.createChannel();
await ach.assertExchange(exchange, 'topic', { durable: true });
await ach.assertQueue(queue, { durable: true });
await ach.bindQueue(queue, exchange, '#');

async function rawLoop(): Promise<number> {
  const model = await amqp.connect(URL);
  const ch = await model.createConfirmChannel();
  const started = performance.now();
  for (let sent = 0; sent < events; sent += batchSize) {
    const confirms: Promise<void>[] = [];
    for (let i = 0; i < Math.min(batchSize, events - sent); i++) {
      const e = conformanceEvent({ name: 'bench.Placed', orderingKey: `k-${i}` });
      confirms.push(
        new Promise((resolve, reject) => {
          ch.publish(
            exchange,
            e.name,
            Buffer.from(getBody(e)),
            {
              persistent: true,
              contentType: 'application/json',
              messageId: e.id,
              headers: getHeaders(e),
            },
            (err: unknown) => (err ? reject(err) : resolve()),
          );
        }),
      );
    }
    await Promise.all(confirms);
  }
  const seconds = (performance.now() - started) / 1000;
  await model.close();
  return events / seconds;
}

async function relayRun(): Promise<number> {
  const db = await postgresTestSchema();
  try {
    const Placed = event({ schema: z.object({ n: z.number(), note: z.string() }) });
    const config = defineOutbox({
      events: { 'bench.Placed': Placed },
      receivers: { 'bench.bus': receiver(AnyEvent, { deliver: rabbitmq({ url: URL, exchange }) }) },
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
  const raw = await rawLoop();
  await ach.purgeQueue(queue);
  const relay = await relayRun();
  const line = (figure: string, perSecond: number) =>
    console.log(
      JSON.stringify({ figure, events, batchSize, relays, perSecond: Math.round(perSecond) }),
    );
  line('rabbitmq raw confirm-channel loop', raw);
  line('rabbitmq relay (PostgreSQL → rabbitmq())', relay);
  console.log(
    JSON.stringify({ figure: 'rabbitmq relay / raw', ratio: Number((relay / raw).toFixed(2)) }),
  );
} finally {
  await ach.deleteQueue(queue).catch(() => {});
  await ach.deleteExchange(exchange).catch(() => {});
  await admin.close();
}
