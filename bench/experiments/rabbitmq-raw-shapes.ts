/**
 * What the local broker takes from amqplib in different publishing shapes, without the
 * outbox: the raw loop of bench/rabbitmq.ts (one confirm channel, one batch of persistent
 * messages at a time, each batch's confirms awaited), then the same messages with more
 * batches in flight, over more channels or connections, and with the socket corked for
 * each batch (one `writev` instead of a `write` per message). Tells which shape a
 * transport could use to go faster, and whether the single-batch raw loop is the broker's
 * limit or only the loop's. With the CPU µs per message of this process and of the broker. Each shape's batches keep the transport's guarantee: every
 * message's confirm is awaited before its batch counts as sent.
 *
 *   npx tsx bench/experiments/rabbitmq-raw-shapes.ts [--events 20000] [--batch-size 500] [--rounds 3] [--shapes seq,inflight2,...]
 */
import type { Socket } from 'node:net';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import amqp, { type ConfirmChannel } from 'amqplib';
import { getBody, type OutboxEvent } from '../../src/index.js';
import { messageOptions } from '../../src/transports/rabbitmq/rabbitmq.js';
import { cpuNow, listenerPid } from './proc-cpu.js';

const AMQP_URL = process.env.OUTBOX_TEST_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const brokerPid = listenerPid(Number(new URL(AMQP_URL).port || 5672));
const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    'batch-size': { type: 'string', default: '500' },
    rounds: { type: 'string', default: '3' },
    shapes: {
      type: 'string',
      default: 'seq,seq-cork,inflight2,inflight2-cork,channels2,connections2,inflight8,channels4',
    },
  },
});
const events = Number(values.events);
const batchSize = Number(values['batch-size']);
const suffix = Math.random().toString(36).slice(2, 8);
const exchange = `bench.x.${suffix}`;
const queue = `bench.q.${suffix}`;

interface Shape {
  /** Connections, channels per connection, batches in flight per channel. */
  connections: number;
  channels: number;
  inFlight: number;
  cork: boolean;
  /** Let amqplib write every `chunk` messages (two check phases) before publishing more. */
  chunk?: number;
}
const SHAPES: Record<string, Shape> = {
  seq: { connections: 1, channels: 1, inFlight: 1, cork: false },
  'seq-cork': { connections: 1, channels: 1, inFlight: 1, cork: true },
  inflight2: { connections: 1, channels: 1, inFlight: 2, cork: false },
  'inflight2-cork': { connections: 1, channels: 1, inFlight: 2, cork: true },
  inflight8: { connections: 1, channels: 1, inFlight: 8, cork: false },
  channels2: { connections: 1, channels: 2, inFlight: 1, cork: false },
  channels4: { connections: 1, channels: 4, inFlight: 2, cork: false },
  connections2: { connections: 2, channels: 1, inFlight: 1, cork: false },
  'seq-chunk100': { connections: 1, channels: 1, inFlight: 1, cork: false, chunk: 100 },
  'seq-chunk50': { connections: 1, channels: 1, inFlight: 1, cork: false, chunk: 50 },
  'inflight2-chunk100': { connections: 1, channels: 1, inFlight: 2, cork: false, chunk: 100 },
};
const checkPhase = () => new Promise<void>((resolve) => setImmediate(resolve));

const at = new Date();
const all: OutboxEvent[] = Array.from({ length: events }, (_, n) => ({
  id: crypto.randomUUID(),
  sequence: String(n + 1),
  name: 'bench.Ping',
  version: 1,
  payload: { n, note: 'an order was placed' },
  headers: {},
  orderingKey: `k-${n}`,
  idempotencyKey: null,
  occurredAt: at,
  recordedAt: at,
  actor: null,
  correlationId: null,
  causedBy: null,
}));

/** Publish `batch` and await every confirm; cork the socket over the batch's writes. */
async function sendBatch(
  ch: ConfirmChannel,
  socket: Socket,
  batch: OutboxEvent[],
  cork: boolean,
  chunk = batch.length,
) {
  if (cork) {
    socket.cork();
    // amqplib's muxer writes the frames in a setImmediate scheduled from a nextTick after
    // the publishes: uncork in the check phase after that one.
    setImmediate(() => setImmediate(() => socket.uncork()));
  }
  const confirms: Promise<void>[] = [];
  for (let i = 0; i < batch.length; i++) {
    if (i > 0 && i % chunk === 0) {
      // The muxer's write of the last chunk runs in the next check phase: wait for it.
      await checkPhase();
      await checkPhase();
    }
    const e = batch[i];
    confirms.push(
      new Promise<void>((resolve, reject) => {
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

async function run(name: string, s: Shape): Promise<number> {
  const models = await Promise.all(
    Array.from({ length: s.connections }, () => amqp.connect(AMQP_URL)),
  );
  const lanes: { ch: ConfirmChannel; socket: Socket }[] = [];
  for (const m of models)
    for (let c = 0; c < s.channels; c++)
      lanes.push({
        ch: await m.createConfirmChannel(),
        socket: (m.connection as unknown as { stream: Socket }).stream,
      });
  let next = 0;
  const cpu0 = cpuNow(brokerPid);
  const started = performance.now();
  const worker = async (lane: (typeof lanes)[number]) => {
    for (;;) {
      const from = next;
      if (from >= events) return;
      next += batchSize;
      await sendBatch(lane.ch, lane.socket, all.slice(from, from + batchSize), s.cork, s.chunk);
    }
  };
  await Promise.all(
    lanes.flatMap((lane) => Array.from({ length: s.inFlight }, () => worker(lane))),
  );
  const perSecond = events / ((performance.now() - started) / 1000);
  const cpu1 = cpuNow(brokerPid);
  const us = (side: 'self' | 'broker') => Math.round(((cpu1[side] - cpu0[side]) / events) * 1e6);
  await Promise.all(models.map((m) => m.close()));
  console.log(
    JSON.stringify({
      shape: name,
      ...s,
      events,
      batchSize,
      perSecond: Math.round(perSecond),
      cpuUsPerEvent: { node: us('self'), broker: us('broker') },
      load1m: Number(loadavg()[0].toFixed(2)),
    }),
  );
  return perSecond;
}

const admin = await amqp.connect(AMQP_URL);
const ach = await admin.createChannel();
await ach.assertExchange(exchange, 'topic', { durable: true });
await ach.assertQueue(queue, { durable: true });
await ach.bindQueue(queue, exchange, '#');
try {
  for (let round = 1; round <= Number(values.rounds); round++)
    for (const name of values.shapes.split(',')) {
      const shape = SHAPES[name];
      if (!shape) throw new Error(`unknown shape ${name}`);
      await run(name, shape);
      await ach.purgeQueue(queue);
    }
} finally {
  await ach.deleteQueue(queue).catch(() => {});
  await ach.deleteExchange(exchange).catch(() => {});
  await admin.close();
}
