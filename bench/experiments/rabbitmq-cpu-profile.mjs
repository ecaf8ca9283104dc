/**
 * Profile the relay → RabbitMQ path on COMPILED code (dist/, so tsx's helpers do not distort
 * it): seed a backlog, then `--relays` in-process relays drain it through `rabbitmq()` to a
 * throwaway exchange and queue on the local broker. With `--profile FILE` the drain alone is
 * profiled through the inspector (100 µs sampling) and written to FILE; summarise with
 * relay-cpu-summary.mjs. Prints events/s and client CPU (user + system) per event.
 * `--dist DIR` takes the library from another build (e.g. a copy of the base tree's dist/).
 *
 *   npm run build
 *   node bench/experiments/rabbitmq-cpu-profile.mjs --events 20000 --relays 1 --profile /tmp/rmq.cpuprofile
 *   node bench/experiments/relay-cpu-summary.mjs /tmp/rmq.cpuprofile
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import amqp from 'amqplib';
import { Sequelize } from 'sequelize';
import { z } from 'zod';

const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const total = Number(arg('events', '20000'));
const relays = Number(arg('relays', '1'));
const keys = Number(arg('keys', String(total)));
const dist = resolve(arg('dist', 'dist'));
const { createOutbox, defineOutbox, event, receiver, silentLogger, rabbitmq } = await import(
  pathToFileURL(`${dist}/src/index.js`).href
);
const url = process.env.OUTBOX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const amqpUrl = process.env.OUTBOX_TEST_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const suffix = randomBytes(4).toString('hex');
const schema = `prof_${suffix}`;
const exchange = `bench.x.${suffix}`;
const queue = `bench.q.${suffix}`;
const admin = await amqp.connect(amqpUrl);
const ach = await admin.createChannel();
await ach.assertExchange(exchange, 'topic', { durable: true });
await ach.assertQueue(queue, { durable: true });
await ach.bindQueue(queue, exchange, '#');

const Ping = event({ schema: z.object({ n: z.number().int(), note: z.string() }) });
const deliver = rabbitmq({ url: amqpUrl, exchange });
const config = defineOutbox({
  events: { 'bench.Ping': Ping },
  receivers: { bus: receiver('bench.Ping', { deliver }) },
});
const sequelize = new Sequelize(url, { logging: false, pool: { max: 2 * relays, min: 0 } });
await sequelize.query(`CREATE SCHEMA "${schema}"`);
const outbox = createOutbox(config, { sequelize, schema, wakeup: null, logger: silentLogger });
try {
  await outbox.migrate();
  for (let from = 0; from < total; from += 1000) {
    const size = Math.min(1000, total - from);
    await outbox.fireMany(
      Array.from({ length: size }, (_, i) => ({
        name: 'bench.Ping',
        payload: { n: from + i, note: 'an order was placed' },
        orderingKey: `k-${(from + i) % keys}`,
      })),
    );
  }
  await sequelize.query(`VACUUM ANALYZE "${schema}"."outbox_events"`);
  await sequelize.query(`VACUUM ANALYZE "${schema}"."outbox_deliveries"`);
  await deliver.deliverBatch([], { signal: new AbortController().signal });
  const stop = new AbortController();
  let delivered = 0;
  outbox.on('relay:delivered', () => {
    if (++delivered === total) stop.abort();
  });
  const cpu0 = process.cpuUsage();
  const profileTo = arg('profile', undefined);
  const session = profileTo ? new Session() : undefined;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
  }
  const started = performance.now();
  await Promise.all(
    Array.from({ length: relays }, (_, i) =>
      outbox.runRelay({
        workerId: `prof-${i}`,
        signal: stop.signal,
        batchSize: 500,
        pollIntervalMs: 50,
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(profileTo, JSON.stringify(profile));
    session.disconnect();
  }
  process.stdout.write(
    `${JSON.stringify({ dist: arg('dist', 'dist'), relays, events: delivered, seconds: +seconds.toFixed(3), eventsPerSecond: Math.round(delivered / seconds), cpuUsPerEvent: +((cpu.user + cpu.system) / delivered).toFixed(2), userUsPerEvent: +(cpu.user / delivered).toFixed(2) })}\n`,
  );
} finally {
  await outbox.close();
  await deliver.close();
  await sequelize.query(`DROP SCHEMA "${schema}" CASCADE`);
  await sequelize.close();
  await ach.deleteQueue(queue).catch(() => {});
  await ach.deleteExchange(exchange).catch(() => {});
  await admin.close();
}
