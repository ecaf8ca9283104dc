import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import amqp, { type Channel, type ChannelModel, type GetMessage } from 'amqplib';
import type { ReceivedMessage } from '../../testing/conformance/index.js';

/** The shared local broker (`.ci/run` starts it); the tests never stop it. */
export const RABBITMQ_URL =
  process.env.OUTBOX_TEST_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

/** A name unique to this test run, for exchanges and queues (files run in parallel). */
export const uniqueName = (what: string) => `obk.test.${what}.${randomBytes(5).toString('hex')}`;

/** The broker's URL through a proxy on `port`. */
export function urlThrough(port: number): string {
  const u = new URL(RABBITMQ_URL);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

/**
 * A TCP proxy in front of the broker that a test can cut (every connection dropped, new
 * ones refused), stall (connections held open, nothing forwarded) and restore, so one
 * client loses its broker while the shared server stays up for every other test file.
 */
export async function cuttableProxy(target = new URL(RABBITMQ_URL)) {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let mode: 'up' | 'down' | 'stalled' = 'up';
  let accepted = 0;
  const held = new Set<Socket>();
  const server: Server = createServer((client) => {
    accepted += 1;
    if (mode === 'down') {
      client.destroy();
      return;
    }
    if (mode === 'stalled') {
      // Accepted and never answered: a broker that hangs.
      held.add(client);
      client.on('error', () => {});
      client.on('close', () => held.delete(client));
      return;
    }
    const upstream = tcpConnect(Number(target.port || 5672), target.hostname);
    const pair = { client, upstream };
    pairs.add(pair);
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ]) {
      a.on('error', () => b.destroy());
      a.on('close', () => {
        pairs.delete(pair);
        b.destroy();
      });
      a.pipe(b);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  const dropAll = () => {
    for (const s of held) s.destroy();
    for (const { client, upstream } of pairs) {
      client.destroy();
      upstream.destroy();
    }
  };
  return {
    port: address.port,
    url: urlThrough(address.port),
    /** How many connections the proxy has accepted so far. */
    accepted: () => accepted,
    /** How many connections are open through it. */
    open: () => pairs.size,
    /** Drop every open connection, and refuse new ones until restored. */
    cut() {
      mode = 'down';
      dropAll();
    },
    /** Hold every connection open but forward nothing either way. */
    stall() {
      mode = 'stalled';
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    /** Accept and forward connections again (a stalled one stays stalled: drop it). */
    restore() {
      if (mode === 'stalled') dropAll();
      mode = 'up';
    },
    async close() {
      mode = 'down';
      dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
export type CuttableProxy = Awaited<ReturnType<typeof cuttableProxy>>;

/** An admin connection to the real broker: declares and deletes what a test uses. */
export async function brokerAdmin() {
  const model: ChannelModel = await amqp.connect(RABBITMQ_URL);
  model.on('error', () => {});
  let channel: Channel = await model.createChannel();
  const exchanges = new Set<string>();
  const queues = new Set<string>();
  /** A channel the broker closed (a failed check) is replaced for the next call. */
  const ch = async () => {
    try {
      // A closed channel throws on any operation; a cheap probe tells.
      await channel.checkExchange('amq.topic');
    } catch {
      channel = await model.createChannel();
    }
    return channel;
  };
  return {
    /** A topic exchange and a durable queue bound to it with `pattern`. */
    async topic(pattern = '#', queueArgs: Record<string, unknown> = {}) {
      const exchange = uniqueName('x');
      const queue = uniqueName('q');
      const c = await ch();
      await c.assertExchange(exchange, 'topic', { durable: true });
      exchanges.add(exchange);
      await c.assertQueue(queue, { durable: true, arguments: queueArgs });
      queues.add(queue);
      await c.bindQueue(queue, exchange, pattern);
      return { exchange, queue };
    },
    /** Note an exchange a wakeup declares, so cleanup deletes it. */
    forget: (exchange: string) => void exchanges.add(exchange),
    async exchangeExists(exchange: string) {
      const probe = await model.createChannel();
      probe.on('error', () => {});
      try {
        await probe.checkExchange(exchange);
        await probe.close();
        return true;
      } catch {
        return false;
      }
    },
    /** Everything in `queue` so far (read and acknowledged), raw. */
    async drain(queue: string): Promise<GetMessage[]> {
      const c = await ch();
      const got: GetMessage[] = [];
      for (;;) {
        const m = await c.get(queue, { noAck: true });
        if (m === false) return got;
        got.push(m);
      }
    },
    async deleteQueue(queue: string) {
      const c = await ch();
      await c.deleteQueue(queue);
      queues.delete(queue);
    },
    async cleanup() {
      const c = await ch();
      for (const q of queues) await c.deleteQueue(q).catch(() => {});
      for (const x of exchanges) await c.deleteExchange(x).catch(() => {});
      await model.close().catch(() => {});
    },
  };
}
export type BrokerAdmin = Awaited<ReturnType<typeof brokerAdmin>>;

/** A message as the conformance suite reads it. */
export function asReceived(m: GetMessage): ReceivedMessage {
  const headers = Object.fromEntries(
    Object.entries(m.properties.headers ?? {}).map(([k, v]) => [
      k,
      Buffer.isBuffer(v) ? v.toString('utf8') : v,
    ]),
  );
  return {
    eventId: m.properties.messageId,
    name: m.properties.type,
    payload: JSON.parse(m.content.toString('utf8')),
    headers,
    orderingKey: (headers['outbox-ordering-key'] as string | undefined) ?? null,
  };
}
