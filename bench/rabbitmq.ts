/**
 * Relay throughput to RabbitMQ against amqplib's own confirm-channel publish loop (the
 * limit), in the same run, on PostgreSQL and the local broker.
 *
 *   npx tsx bench/rabbitmq.ts [--events 20000] [--batch-size 500] [--relays 1,4] [--keys 500]
 *                             [--rounds 1] [--transports new] [--cpu]
 *
 * raw: the messages the transport would send for the same events — the same body, the same
 * properties and headers (`messageOptions`, the transport's own function: persistent,
 * `mandatory` as the transport's default, the ordering-key header), on one confirm
 * channel, in batches of `batch-size`, each message with its confirm callback, each batch's
 * confirms awaited before the next. That is the transport's guarantee (no row recorded
 * delivered before its broker ack) without the outbox. Its connection is open before the
 * clock starts.
 * relay: `events` events fired and settled (not timed), then `relays` relays in this process
 * drain them through the transport; the clock starts with the transport's connection
 * already open (an empty `deliverBatch` opens it) and stops at the last `relay:delivered`.
 *
 * `--transports` lists what the relays deliver through, each timed after the same round's
 * raw loop: `new` (`rabbitmq()` of src/), `none` (a no-op `deliverBatch`: the database's
 * own ceiling). To compare an older transport, run this file in a worktree of that commit
 * (bench/README.md, "A/B"), not a copy of it here. `--rounds` repeats raw + each transport, interleaved (the
 * transports in reverse order in even rounds). `--cpu`
 * adds the CPU µs per event of this process, the broker (the process listening on its port)
 * and every postgres process over each timed part (Linux /proc; the postgres figure includes
 * other clients' work on the shared server).
 * One JSON line per figure.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import amqp from 'amqplib';
import {
  createOutbox,
  type DeliveryItem,
  type DeliveryResult,
  defineOutbox,
  getBody,
  type OutboxDelivery,
  type OutboxEvent,
  rabbitmq,
  receiver,
  silentLogger,
} from '../src/index.js';
import { messageOptions } from '../src/transports/rabbitmq/rabbitmq.js';
import { dropSchema, newSchemaName, openSequelize, Ping } from './common.js';
import { cpuNow, listenerPid } from './experiments/proc-cpu.js';
import { settle } from './pg.js';

const AMQP_URL = process.env.OUTBOX_TEST_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    'batch-size': { type: 'string', default: '500' },
    relays: { type: 'string', default: '1' },
    keys: { type: 'string', default: '500' },
    rounds: { type: 'string', default: '1' },
    transports: { type: 'string', default: 'new' },
    cpu: { type: 'boolean', default: false },
  },
});
const events = Number(values.events);
const batchSize = Number(values['batch-size']);
const relayCounts = values.relays.split(',').map(Number);
/** How many ordering keys the events spread over (a claim holds one event per key). */
const keys = Number(values.keys);
const rounds = Number(values.rounds);
const TRANSPORTS = ['new', 'none'] as const;
type TransportKind = (typeof TRANSPORTS)[number];
const transports = values.transports.split(',') as TransportKind[];
for (const t of transports)
  if (!TRANSPORTS.includes(t)) throw new Error(`--transports: unknown ${t} (${TRANSPORTS})`);
const suffix = Math.random().toString(36).slice(2, 8);
const exchange = `bench.x.${suffix}`;
const queue = `bench.q.${suffix}`;
const EVENT_NAME = 'bench.Ping';
const NOTE = 'an order was placed';

const admin = await amqp.connect(AMQP_URL);
const ach = await admin.createChannel();
await ach.assertExchange(exchange, 'topic', { durable: true });
await ach.assertQueue(queue, { durable: true });
await ach.bindQueue(queue, exchange, '#');

const brokerPid = values.cpu ? listenerPid(Number(new URL(AMQP_URL).port || 5672)) : undefined;
if (values.cpu && !brokerPid)
  process.stderr.write('bench: no process found listening on the broker port\n');

/** Time `run`, with the CPU each side spent over it (`--cpu`). */
async function timed(run: () => Promise<void>) {
  const cpu0 = values.cpu ? cpuNow(brokerPid) : undefined;
  const started = performance.now();
  await run();
  const seconds = (performance.now() - started) / 1000;
  const cpu1 = values.cpu ? cpuNow(brokerPid) : undefined;
  /** CPU µs per event of one side over the timed part. */
  const us = (side: 'self' | 'broker' | 'postgres') =>
    cpu0 && cpu1 ? Math.round(((cpu1[side] - cpu0[side]) / events) * 1e6) : undefined;
  return {
    seconds: Number(seconds.toFixed(3)),
    perSecond: Math.round(events / seconds),
    ...(values.cpu && {
      cpuUsPerEvent: { node: us('self'), broker: us('broker'), postgres: us('postgres') },
    }),
  };
}

/** The events the relay hands the transport, as `fire` stores them. */
function benchEvents(): OutboxEvent[] {
  const at = new Date();
  return Array.from({ length: events }, (_, n) => ({
    id: crypto.randomUUID(),
    sequence: String(n + 1),
    name: EVENT_NAME,
    version: 1,
    payload: { n, note: NOTE },
    headers: {},
    orderingKey: `k-${n % keys}`,
    idempotencyKey: null,
    occurredAt: at,
    recordedAt: at,
    actor: null,
    correlationId: null,
    causedBy: null,
  }));
}

async function rawLoop() {
  const all = benchEvents();
  const model = await amqp.connect(AMQP_URL);
  const ch = await model.createConfirmChannel();
  try {
    return await timed(async () => {
      for (let sent = 0; sent < events; sent += batchSize) {
        const confirms: Promise<void>[] = [];
        for (let i = sent; i < Math.min(sent + batchSize, events); i++) {
          const e = all[i];
          confirms.push(
            new Promise((resolve, reject) => {
              ch.publish(
                exchange,
                e.name,
                Buffer.from(getBody(e)),
                messageOptions(e, false),
                (err: unknown) => (err ? reject(err) : resolve()),
              );
            }),
          );
        }
        await Promise.all(confirms);
      }
    });
  } finally {
    await model.close();
  }
}

const noop: OutboxDelivery = {
  name: 'noop',
  deliverBatch: async (items: readonly DeliveryItem[]): Promise<readonly DeliveryResult[]> =>
    items.map(() => ({ status: 'sent' })),
};

async function relayRun(kind: TransportKind, relays: number) {
  const sequelize = openSequelize(2 * relays);
  const schema = newSchemaName();
  const deliver = kind === 'new' ? rabbitmq({ url: AMQP_URL, exchange }) : noop;
  const config = defineOutbox({
    events: { [EVENT_NAME]: Ping },
    receivers: { bus: receiver(EVENT_NAME, { deliver }) },
  });
  const outbox = createOutbox(config, { sequelize, schema, wakeup: null, logger: silentLogger });
  try {
    await outbox.migrate();
    for (let n = 0; n < events; n += 1000)
      await outbox.fireMany(
        Array.from({ length: Math.min(1000, events - n) }, (_, i) => ({
          name: EVENT_NAME,
          payload: { n: n + i, note: NOTE },
          orderingKey: `k-${(n + i) % keys}`,
        })),
      );
    await settle(schema);
    // Open the transport's connection before the clock starts, as the raw loop's is.
    const opened = await deliver.deliverBatch?.([], { signal: new AbortController().signal });
    if (opened?.length) throw new Error('an empty deliverBatch answered results');
    const stop = new AbortController();
    let delivered = 0;
    outbox.on('relay:delivered', () => {
      delivered += 1;
      if (delivered === events) stop.abort();
    });
    const result = await timed(async () => {
      await Promise.all(
        Array.from({ length: relays }, (_, i) =>
          outbox.runRelay({
            workerId: `bench-${i}`,
            signal: stop.signal,
            batchSize,
            pollIntervalMs: 50,
          }),
        ),
      );
    });
    const counts = await outbox.countDeliveries();
    if (counts.succeeded !== events)
      throw new Error(`the relay did not deliver every event: ${JSON.stringify(counts)}`);
    return result;
  } finally {
    await outbox.close();
    await deliver.close?.();
    await dropSchema(sequelize, schema);
    await sequelize.close();
  }
}

/** Every message sent reached the queue (and no more): what was timed was delivered. */
async function expectQueued(n: number): Promise<void> {
  const { messageCount } = await ach.checkQueue(queue);
  if (messageCount !== n) throw new Error(`the queue holds ${messageCount} messages, not ${n}`);
}

const load = () => Number(loadavg()[0].toFixed(2));
try {
  for (let round = 1; round <= rounds; round++)
    for (const relays of relayCounts) {
      const raw = await rawLoop();
      await expectQueued(events);
      await ach.purgeQueue(queue);
      console.log(
        JSON.stringify({ round, figure: 'raw', relays, events, batchSize, load1m: load(), ...raw }),
      );
      // Even rounds take the transports in reverse, so none always runs first after the raw loop.
      for (const kind of round % 2 === 0 ? [...transports].reverse() : transports) {
        const relay = await relayRun(kind, relays);
        await expectQueued(kind === 'none' ? 0 : events);
        await ach.purgeQueue(queue);
        console.log(
          JSON.stringify({
            round,
            figure: kind,
            relays,
            events,
            batchSize,
            keys,
            load1m: load(),
            ...relay,
            vsRaw: Number((relay.perSecond / raw.perSecond).toFixed(2)),
          }),
        );
      }
    }
} finally {
  await ach.deleteQueue(queue).catch(() => {});
  await ach.deleteExchange(exchange).catch(() => {});
  await admin.close();
}
