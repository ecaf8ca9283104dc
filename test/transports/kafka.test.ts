import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AnyEvent,
  ConfigurationError,
  createOutbox,
  defineOutbox,
  event,
  kafka,
  type OutboxDelivery,
  PermanentFailure,
  receiver,
} from '../../src/index.js';
import { silentLogger } from '../../src/observe/logger.js';
import {
  conformanceEvent,
  conformanceItems,
  type ReceivedMessage,
  type TransportFactory,
  transportConformance,
} from '../../testing/conformance/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { rowsOf, waitFor } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  asReceived,
  brokerList,
  cuttableKafka,
  KAFKA_BROKERS,
  type TopicReader,
  testProducer,
  topicReader,
  uniqueTopic,
} from './kafka-support.js';

/*
 * Against a real Kafka protocol server: librdkafka's mock cluster (kcat), started by the
 * global setup, or the cluster OUTBOX_TEST_KAFKA_BROKERS names. A topic per test; records
 * read back with a kafkajs consumer of a throwaway group, as a consumer would read them.
 *
 * Each read waits ~3 s for its new group to join the mock (its fixed initial rebalance
 * delay: a timer, not work), so the tests run concurrently (`describe.concurrent`): each
 * has a topic, a reader's group, a transport and, where it cuts or stalls the broker, a
 * proxy of its own, so none can see or break another's records, and the joins' waits
 * overlap instead of adding up (the file took ~55 s one after another). The two tests of a
 * dialect share its database and stay one after the other (`it.sequential`). The options'
 * test comes first, so the concurrent groups are neighbours and run as one. A concurrent
 * test asserts with its own `expect` (vitest's rule for concurrent tests).
 */
const describeKafka = describe.skipIf(KAFKA_BROKERS === null);
const never = new AbortController().signal;
/** A test of a dialect's: after the other of its dialect (they share its database). */
const itKafka = KAFKA_BROKERS === null ? it.skip : it.sequential;

/**
 * A topic per check, the transport on a client whose connections go through cuttable
 * proxies. Kafka takes or refuses a produce request per partition, not per record, so the
 * one refusal of an item alone is one the transport makes before sending: a topic function
 * naming an illegal topic for the refused events.
 */
const factory: TransportFactory = async ({ runId }) => {
  const topic = `obk-conf-${runId}`;
  const path = await cuttableKafka();
  const refused = new Set<string>();
  const transport = kafka({
    // A request the stalled proxy swallows times out in 3 s, not kafkajs's 30 s default.
    client: path.client({ requestTimeout: 3_000 }),
    topic: (e) => (refused.has(e.id) ? 'not a topic!' : topic),
  });
  let reader: TopicReader | undefined;
  return {
    transport,
    async received(): Promise<readonly ReceivedMessage[]> {
      reader ??= await topicReader([topic]);
      return reader.records().map(asReceived);
    },
    failDestination: async () => path.cut(),
    restoreDestination: async () => path.restore(),
    stallDestination: async () => path.stall(),
    failEvents: async (ids) => {
      for (const id of ids) refused.add(id);
    },
    async cleanup() {
      await reader?.stop();
      await path.close();
    },
  };
};

describe('kafka(): options', () => {
  it('refuses bad options before connecting, naming the option', () => {
    expect(() => kafka({} as never)).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: kafka() takes exactly one of brokers, client and producer (got none)]`,
    );
    expect(() =>
      kafka({ brokers: 'a:1', producer: {} as never }),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: kafka() takes exactly one of brokers, client and producer (got brokers and producer)]`,
    );
    expect(() => kafka({ brokers: 'localhost' })).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: kafka({ brokers }) must list brokers as "host:port" (got "localhost")]`,
    );
    expect(() => kafka({ brokers: ['a:9092'], topic: 'no spaces' })).toThrow(ConfigurationError);
    expect(() => kafka({ brokers: ['a:9092'], ackTimeoutMs: 0 })).toThrow(/ackTimeoutMs/);
    expect(() => kafka({ producer: {} as never })).toThrow(/must be a kafkajs producer/);
  });
});

describeKafka.concurrent('kafka() conformance', () => {
  // A new consumer group takes ~3 s to join on the mock: room for it in every read.
  transportConformance('kafka', factory, { receiveTimeoutMs: 15_000, attemptTimeoutMs: 4_000 });
});

describeKafka.concurrent('kafka()', () => {
  it('loads kafkajs and connects only when it first sends: creating the transport opens no connection', async ({
    expect,
  }) => {
    const path = await cuttableKafka();
    const transport = kafka({ client: path.client() });
    expect(path.accepted()).toBe(0);
    await transport.close?.();
    expect(path.accepted()).toBe(0);
    await path.close();
  });

  it('a record carries the payload JSON as value, the ordering key as key, and the headers, event id and topic', async ({
    expect,
  }) => {
    const topic = uniqueTopic('record');
    const reader = await topicReader([topic]);
    const transport = kafka({ brokers: KAFKA_BROKERS!, topic });
    const e = conformanceEvent({
      name: 'shop.OrderPlaced',
      orderingKey: 'order-1',
      headers: { 'x-trace': 'abc', 'x-n': 3 },
      payload: { total: 12.5, note: 'ünïcödé' },
    });
    const keyless = conformanceEvent({ orderingKey: null });
    expect(
      await transport.deliverBatch!(conformanceItems([e, keyless]), { signal: never }),
    ).toEqual([{ status: 'sent' }, { status: 'sent' }]);
    const records = await reader.until((r) => r.length >= 2);
    const r = records.find((x) => x.headers['outbox-event-id'] === e.id)!;
    expect(r.key).toBe('order-1');
    expect(JSON.parse(r.value)).toEqual({ total: 12.5, note: 'ünïcödé' });
    expect(r.headers).toEqual({
      'x-trace': 'abc',
      'x-n': '3',
      'outbox-event-id': e.id,
      'outbox-topic': 'shop.OrderPlaced',
    });
    expect(records.find((x) => x.headers['outbox-event-id'] === keyless.id)?.key).toBeNull();
    await reader.stop();
    await transport.close?.();
  });

  it("to the event's own topic by default, one sendBatch spanning several topics", async ({
    expect,
  }) => {
    const a = uniqueTopic('own-a');
    const b = uniqueTopic('own-b');
    const reader = await topicReader([a, b]);
    const transport = kafka({ brokers: brokerList() });
    const events = [
      conformanceEvent({ name: a }),
      conformanceEvent({ name: b }),
      conformanceEvent({ name: a }),
    ];
    expect(
      (await transport.deliverBatch!(conformanceItems(events), { signal: never }))!.map(
        (r) => r.status,
      ),
    ).toEqual(['sent', 'sent', 'sent']);
    const records = await reader.until((r) => r.length >= 3);
    expect(records.filter((r) => r.topic === a)).toHaveLength(2);
    expect(records.filter((r) => r.topic === b)).toHaveLength(1);
    for (const r of records) expect(r.headers['outbox-topic']).toBe(r.topic);
    await reader.stop();
    await transport.close?.();
  });

  it('a given producer is used as it is and never disconnected by close()', async ({ expect }) => {
    const topic = uniqueTopic('given');
    const producer = testProducer();
    await producer.connect();
    let disconnected = 0;
    producer.on(producer.events.DISCONNECT, () => {
      disconnected += 1;
    });
    const transport = kafka({ producer, topic });
    expect(
      await transport.deliverBatch!(conformanceItems([conformanceEvent()]), { signal: never }),
    ).toEqual([{ status: 'sent' }]);
    await transport.close?.();
    expect(disconnected).toBe(0);
    // Still usable by its owner.
    await producer.send({ topic, messages: [{ value: 'mine' }] });
    await producer.disconnect();
    expect(disconnected).toBe(1);
  });

  it('a broker that never answers fails the batch within the attempt time limit, never sent', async ({
    expect,
  }) => {
    const transport = kafka({ brokers: '127.0.0.1:1', topic: uniqueTopic('nowhere') });
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error('attempt timed out')), 5_000);
    const results = await transport.deliverBatch!(conformanceItems([conformanceEvent()]), {
      signal: controller.signal,
    });
    clearTimeout(timer);
    expect(results!.map((r) => r.status)).toEqual(['failed']);
    await transport.close?.();
  });

  it('a record the broker will never take fails as a PermanentFailure, alone, while the rest of its batch is sent', async ({
    expect,
  }) => {
    const topic = uniqueTopic('permanent');
    const reader = await topicReader([topic]);
    // A producer whose broker refuses one record for good (MESSAGE_TOO_LARGE), as a broker
    // with a lower message.max.bytes would; the mock has no such limit to configure.
    const real = testProducer();
    await real.connect();
    const tooLarge = Object.assign(
      new Error(
        'The request included a message larger than the max message size the server will accept',
      ),
      {
        name: 'KafkaJSProtocolError',
        type: 'MESSAGE_TOO_LARGE',
        retriable: false,
      },
    );
    const producer = {
      connect: () => real.connect(),
      disconnect: () => real.disconnect(),
      sendBatch: async (batch: Parameters<typeof real.sendBatch>[0]) => {
        const values = batch.topicMessages!.flatMap((t) => t.messages.map((m) => String(m.value)));
        if (values.some((v) => v.includes('"huge"'))) throw tooLarge;
        return real.sendBatch(batch);
      },
    };
    const transport = kafka({ producer, topic });
    const events = [
      conformanceEvent({ payload: { n: 1 } }),
      conformanceEvent({ payload: { n: 2, huge: true } }),
      conformanceEvent({ payload: { n: 3 } }),
    ];
    const results = await transport.deliverBatch!(conformanceItems(events), { signal: never });
    expect(results!.map((r) => r.status)).toEqual(['sent', 'failed', 'sent']);
    const error = (results![1] as { error: unknown }).error;
    expect(error).toBeInstanceOf(PermanentFailure);
    expect((error as Error).message).toMatch(
      /^Kafka refused the record for good \(MESSAGE_TOO_LARGE\)/,
    );
    const records = await reader.until((r) => r.length >= 2);
    expect(records.map((r) => JSON.parse(r.value).n).sort()).toEqual([1, 3]);
    await reader.stop();
    await real.disconnect();
  });
});

// The dialects at once, each on its database; its own two tests one after the other.
describe.concurrent('kafka() through an outbox, each dialect at once', () => {
  describeEachDialect('kafka() through an outbox', (dialect) => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await dialect.open();
    });
    afterAll(() => db.cleanup());

    const Placed = event({ schema: z.object({ order: z.string(), step: z.number() }) });

    async function outboxTo(deliver: OutboxDelivery) {
      const config = defineOutbox({
        events: { 'shop.OrderPlaced': Placed },
        receivers: { 'shop.bus': receiver(AnyEvent, { deliver, maxAttempts: 50 }) },
        // Retries in tens of milliseconds, so the outage test waits on the broker, not a backoff.
        settings: { backoff: { baseSeconds: 0.05, capSeconds: 0.2 } },
      });
      const outbox = createOutbox(config, {
        ...db.outboxOptions,
        wakeup: null,
        logger: silentLogger,
        tablePrefix: `kfk_${Math.random().toString(36).slice(2, 8)}_`,
      });
      await outbox.migrate();
      return outbox;
    }

    itKafka(
      'order per key across partitions: each key in one partition, its events in the order fired, with headers and ids',
      async ({ expect }) => {
        const topic = uniqueTopic('order');
        const reader = await topicReader([topic]);
        const outbox = await outboxTo(kafka({ brokers: KAFKA_BROKERS!, topic }));
        const keys = Array.from({ length: 12 }, (_, i) => `order-${i}`);
        const fired: { id: string; key: string }[] = [];
        for (let step = 0; step < 8; step++)
          for (const key of keys) {
            const e = await outbox.fire(
              'shop.OrderPlaced',
              { order: key, step },
              { orderingKey: key, headers: { 'x-step': String(step) } },
            );
            fired.push({ id: e.id, key });
          }
        const counts = await drainOutbox(outbox);
        expect(counts.succeeded).toBe(fired.length);
        const records = await reader.until((r) => r.length >= fired.length);
        expect(records.map((r) => r.headers['outbox-event-id']).sort()).toEqual(
          fired.map((f) => f.id).sort(),
        );
        const partitionsOf = new Map<string, Set<number>>();
        for (const r of records) {
          expect(r.headers['outbox-topic']).toBe('shop.OrderPlaced');
          expect(r.headers['x-step']).toBe(String(JSON.parse(r.value).step));
          partitionsOf.set(r.key!, (partitionsOf.get(r.key!) ?? new Set()).add(r.partition));
        }
        // A key stays in one partition, and the keys spread over more than one.
        for (const key of keys) expect(partitionsOf.get(key)?.size).toBe(1);
        expect(new Set(records.map((r) => r.partition)).size).toBeGreaterThan(1);
        // In each partition (offset order), a key's events are in the order fired.
        for (const key of keys)
          expect(
            records
              .filter((r) => r.key === key)
              .sort((a, b) => Number(a.offset) - Number(b.offset))
              .map((r) => r.headers['outbox-event-id']),
          ).toEqual(fired.filter((f) => f.key === key).map((f) => f.id));
        await reader.stop();
        await outbox.close();
      },
      60_000,
    );

    itKafka(
      'the broker unreachable mid-run: failures recorded and retried, everything delivered after recovery, nothing lost',
      async ({ expect }) => {
        const topic = uniqueTopic('outage');
        const reader = await topicReader([topic]);
        const path = await cuttableKafka();
        const outbox = await outboxTo(kafka({ client: path.client(), topic }));
        const stop = new AbortController();
        const running = outbox.runRelay({ signal: stop.signal, pollIntervalMs: 20 });
        try {
          const ids: string[] = [];
          const fire = async (step: number) =>
            ids.push(
              (
                await outbox.fire(
                  'shop.OrderPlaced',
                  { order: `o-${step % 3}`, step },
                  { orderingKey: `o-${step % 3}` },
                )
              ).id,
            );
          for (let step = 0; step < 5; step++) await fire(step);
          await waitFor(
            async () => (await rowsOf(outbox, 'shop.bus')).every((r) => r.status === 'succeeded'),
            'the first events to be delivered',
            15_000,
          );
          path.cut();
          for (let step = 5; step < 12; step++) await fire(step);
          await waitFor(
            async () => (await rowsOf(outbox, 'shop.bus')).some((r) => r.attempts >= 2),
            'the relay to record failures and retry them',
            20_000,
          );
          const during = await rowsOf(outbox, 'shop.bus');
          // Recorded failures: a row being retried right now reads 'claimed', but keeps its
          // last error and its spent attempts.
          expect(
            during.filter(
              (r) => r.status !== 'succeeded' && r.attempts >= 1 && r.lastError !== null,
            ).length,
          ).toBeGreaterThan(0);
          expect(during.filter((r) => r.status === 'dead')).toEqual([]);
          path.restore();
          await waitFor(
            async () => (await rowsOf(outbox, 'shop.bus')).every((r) => r.status === 'succeeded'),
            'every event to be delivered after the broker is back',
            30_000,
          );
          const records = await reader.until(
            (r) => new Set(r.map((x) => x.headers['outbox-event-id'])).size >= ids.length,
          );
          const got = records.map((r) => r.headers['outbox-event-id']);
          // At least once: every event arrived; a retry may have sent one twice.
          expect([...new Set(got)].sort()).toEqual([...ids].sort());
          // In order per key, counting each event's first arrival.
          for (const key of ['o-0', 'o-1', 'o-2']) {
            const firsts = [
              ...new Set(
                records
                  .filter((r) => r.key === key)
                  .sort((a, b) => Number(a.offset) - Number(b.offset))
                  .map((r) => r.headers['outbox-event-id']),
              ),
            ];
            expect(firsts).toEqual(ids.filter((_, i) => `o-${i % 3}` === key));
          }
        } finally {
          stop.abort();
          await running.catch(() => {});
          await outbox.close();
          await reader.stop();
          await path.close();
        }
      },
      90_000,
    );
  });
});
