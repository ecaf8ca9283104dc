import { randomBytes } from 'node:crypto';
import { connect as tcpConnect } from 'node:net';
import { type Consumer, Kafka, type KafkaConfig, logLevel, Partitioners } from 'kafkajs';
import { inject } from 'vitest';
import type { ReceivedMessage } from '../../testing/conformance/index.js';
import { type CuttableProxy, cuttableProxy } from './rabbitmq-support.js';

/**
 * The Kafka the tests use: `OUTBOX_TEST_KAFKA_BROKERS`, else the kcat mock cluster the
 * global setup started (`test/kafka-mock.ts`); `null` when neither: the suites skip.
 */
export const KAFKA_BROKERS: string | null = inject('kafkaBrokers');

/** The brokers as a list (empty when there is no Kafka). */
export const brokerList = (): string[] => (KAFKA_BROKERS ? KAFKA_BROKERS.split(',') : []);

/** A topic name of its own per test (the mock auto-creates it with 4 partitions). */
export const uniqueTopic = (what: string) => `obk-test-${what}-${randomBytes(5).toString('hex')}`;

/** A kafkajs client of the test's own, quiet. */
export function testKafka(config: Partial<KafkaConfig> = {}): Kafka {
  return new Kafka({
    clientId: 'outboxkit-test',
    brokers: brokerList(),
    logLevel: logLevel.NOTHING,
    connectionTimeout: 2_000,
    retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1_000 },
    ...config,
  });
}

/**
 * A cuttable path to Kafka for one client: a TCP proxy (the RabbitMQ tests' one) in front
 * of every broker the cluster advertises, and a kafkajs `socketFactory` that sends each
 * connection through the proxy of the broker it asks for. Cutting the proxies drops that
 * client's connections and refuses new ones while the shared cluster stays up for every
 * other test; stalling holds them open with nothing forwarded.
 */
export async function cuttableKafka() {
  const admin = testKafka().admin();
  await admin.connect();
  const { brokers } = await admin.describeCluster();
  await admin.disconnect();
  const targets = new Set([...brokerList(), ...brokers.map((b) => `${b.host}:${b.port}`)]);
  const proxies = new Map<string, CuttableProxy>();
  for (const t of targets) proxies.set(t, await cuttableProxy(new URL(`tcp://${t}`)));
  const socketFactory: NonNullable<KafkaConfig['socketFactory']> = ({ host, port, onConnect }) => {
    const proxy = proxies.get(`${host}:${port}`);
    if (!proxy) throw new Error(`no test proxy for broker ${host}:${port}`);
    const socket = tcpConnect({ host: '127.0.0.1', port: proxy.port }, onConnect);
    socket.setKeepAlive(true, 1_000);
    return socket;
  };
  const each = (f: (p: CuttableProxy) => void) => {
    for (const p of proxies.values()) f(p);
  };
  return {
    /** A kafkajs client whose every connection goes through the proxies. */
    client: (config: Partial<KafkaConfig> = {}) => testKafka({ socketFactory, ...config }),
    cut: () => each((p) => p.cut()),
    stall: () => each((p) => p.stall()),
    restore: () => each((p) => p.restore()),
    accepted: () => [...proxies.values()].reduce((n, p) => n + p.accepted(), 0),
    async close() {
      for (const p of proxies.values()) await p.close();
    },
  };
}
export type CuttableKafka = Awaited<ReturnType<typeof cuttableKafka>>;

/** A record as a kafkajs consumer read it. */
export interface ReadRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: string | null;
  readonly value: string;
  readonly headers: Record<string, string>;
}

/**
 * Read `topics` from the beginning with a kafkajs consumer of a throwaway group, as a
 * consumer of the transport's records would; `records()` is everything read so far, in
 * the order read (a partition's records in offset order). The mock takes ~3 s to let a
 * new group join: start the reader before a test sends, and wait with `until`.
 */
export async function topicReader(topics: readonly string[]) {
  const consumer: Consumer = testKafka().consumer({
    groupId: uniqueTopic('reader'),
    maxWaitTimeInMs: 100,
    sessionTimeout: 10_000,
    heartbeatInterval: 1_000,
  });
  const got: ReadRecord[] = [];
  await consumer.connect();
  await consumer.subscribe({ topics: [...topics], fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ topic, partition, message }) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(message.headers ?? {}))
        headers[k] = Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
      got.push({
        topic,
        partition,
        offset: message.offset,
        key: message.key ? message.key.toString('utf8') : null,
        value: message.value ? message.value.toString('utf8') : '',
        headers,
      });
    },
  });
  return {
    records: (): readonly ReadRecord[] => got,
    /** Wait until `done` holds of what was read (or `timeoutMs` passes); returns the records. */
    async until(done: (records: readonly ReadRecord[]) => boolean, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!done(got) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      return got;
    },
    stop: () => consumer.disconnect(),
  };
}
export type TopicReader = Awaited<ReturnType<typeof topicReader>>;

/** A record as the conformance suite reads it. */
export function asReceived(r: ReadRecord): ReceivedMessage {
  return {
    eventId: r.headers['outbox-event-id'],
    name: r.headers['outbox-topic'],
    payload: JSON.parse(r.value),
    headers: r.headers,
    orderingKey: r.key,
  };
}

/** kafkajs's own producer for a test, quiet and with the default (murmur2) partitioner. */
export function testProducer(kafka: Kafka = testKafka()) {
  return kafka.producer({
    allowAutoTopicCreation: true,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
}
