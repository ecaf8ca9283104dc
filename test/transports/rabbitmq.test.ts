import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AnyEvent,
  ConfigurationError,
  createOutbox,
  defineOutbox,
  event,
  type OutboxDelivery,
  rabbitmq,
  receiver,
} from '../../src/index.js';
import { silentLogger } from '../../src/observe/logger.js';
import {
  conformanceEvent,
  conformanceItems,
  type TransportFactory,
  transportConformance,
} from '../../testing/conformance/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { rowsOf, waitFor } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  asReceived,
  type BrokerAdmin,
  brokerAdmin,
  cuttableProxy,
  RABBITMQ_URL,
  uniqueName,
} from './rabbitmq-support.js';

let admin: BrokerAdmin;
beforeAll(async () => {
  admin = await brokerAdmin();
});
afterAll(() => admin.cleanup());

const never = new AbortController().signal;

/**
 * A topic exchange and a queue bound to `conformance.#` for each check, the transport
 * behind a cuttable proxy. An event the check wants refused is routed where no queue is
 * bound and, published `mandatory`, returned by the broker: a refusal of that item alone.
 */
const factory: TransportFactory = async () => {
  const { exchange, queue } = await admin.topic('conformance.#');
  const proxy = await cuttableProxy();
  const refused = new Set<string>();
  const transport = rabbitmq({
    url: proxy.url,
    exchange,
    mandatory: true,
    connectTimeoutMs: 1_000,
    routingKey: (e) => (refused.has(e.id) ? 'refused.nowhere' : e.name),
  });
  const seen: ReturnType<typeof asReceived>[] = [];
  return {
    transport,
    async received() {
      for (const m of await admin.drain(queue)) seen.push(asReceived(m));
      return seen;
    },
    failDestination: async () => proxy.cut(),
    restoreDestination: async () => proxy.restore(),
    failEvents: async (ids) => {
      for (const id of ids) refused.add(id);
    },
    stallDestination: async () => proxy.stall(),
    cleanup: () => proxy.close(),
  };
};

transportConformance('rabbitmq', factory);

describe('rabbitmq()', () => {
  it('refuses bad options before connecting, naming the option and never the password', () => {
    expect(() =>
      rabbitmq({ url: 'http://guest:s3cret@localhost', exchange: 'x' }),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: rabbitmq({ url }) must be an amqp:// or amqps:// URL (got "http://guest:***@localhost/")]`,
    );
    expect(() => rabbitmq({ url: RABBITMQ_URL, exchange: 7 as never })).toThrow(ConfigurationError);
    expect(() => rabbitmq({ url: RABBITMQ_URL, exchange: 'x', routingKey: 3 as never })).toThrow(
      /routingKey \}\) must be a string or a function/,
    );
  });

  it('loads amqplib only when it first sends: creating the transport opens no connection', async () => {
    const proxy = await cuttableProxy();
    const transport = rabbitmq({ url: proxy.url, exchange: 'amq.topic' });
    expect(proxy.accepted()).toBe(0);
    await transport.close?.();
    await proxy.close();
  });

  it('publishes persistent JSON messages with the event id as message id, its headers, and the event name as routing key', async () => {
    const { exchange, queue } = await admin.topic('shop.#');
    const transport = rabbitmq({ url: RABBITMQ_URL, exchange });
    const e = conformanceEvent({
      name: 'shop.OrderPlaced',
      orderingKey: 'order-1',
      headers: { 'x-trace': 'abc', 'x-n': 3 },
      payload: { total: 12.5 },
    });
    const results = await transport.deliverBatch!(conformanceItems([e]), { signal: never });
    expect(results).toEqual([{ status: 'sent' }]);
    const [m] = await admin.drain(queue);
    expect(m.fields.routingKey).toBe('shop.OrderPlaced');
    expect(m.fields.exchange).toBe(exchange);
    expect(m.properties).toMatchObject({
      deliveryMode: 2,
      contentType: 'application/json',
      messageId: e.id,
      type: 'shop.OrderPlaced',
    });
    expect(JSON.parse(m.content.toString())).toEqual({ total: 12.5 });
    expect(asReceived(m).headers).toEqual({
      'x-trace': 'abc',
      'x-n': '3',
      'outbox-event-id': e.id,
      'outbox-topic': 'shop.OrderPlaced',
      'outbox-ordering-key': 'order-1',
    });
    await transport.close?.();
  });

  it('a fixed routing key, and the default exchange routing to a queue by name', async () => {
    const { queue } = await admin.topic('never.matches');
    const transport = rabbitmq({ url: RABBITMQ_URL, exchange: '', routingKey: queue });
    const e = conformanceEvent();
    expect(await transport.deliverBatch!(conformanceItems([e]), { signal: never })).toEqual([
      { status: 'sent' },
    ]);
    expect((await admin.drain(queue)).map((m) => m.properties.messageId)).toEqual([e.id]);
    await transport.close?.();
  });

  it('an exchange that does not exist fails the batch naming it, and sends once it is declared', async () => {
    const exchange = uniqueName('missing');
    const transport = rabbitmq({ url: RABBITMQ_URL, exchange });
    const results = await transport.deliverBatch!(conformanceItems([conformanceEvent()]), {
      signal: never,
    });
    expect(results).toHaveLength(1);
    expect(results![0].status).toBe('failed');
    const error = (results![0] as { error: Error }).error;
    expect(error.message).toContain(`the RabbitMQ exchange "${exchange}" does not exist`);
    expect(error.message).not.toContain('guest:guest');
    const { queue, exchange: declared } = await admin.topic('#');
    const later = rabbitmq({ url: RABBITMQ_URL, exchange: declared });
    expect(
      await later.deliverBatch!(conformanceItems([conformanceEvent()]), { signal: never }),
    ).toEqual([{ status: 'sent' }]);
    expect(await admin.drain(queue)).toHaveLength(1);
    await transport.close?.();
    await later.close?.();
  });

  it('confirms are awaited: a message the broker nacks (a full reject-publish queue) is failed, not sent', async () => {
    // max-length 0 with reject-publish: RabbitMQ nacks every message routed to the queue.
    const { exchange } = await admin.topic('#', {
      'x-max-length': 0,
      'x-overflow': 'reject-publish',
    });
    const transport = rabbitmq({ url: RABBITMQ_URL, exchange });
    const results = await transport.deliverBatch!(
      conformanceItems([conformanceEvent(), conformanceEvent()]),
      { signal: never },
    );
    expect(results!.map((r) => r.status)).toEqual(['failed', 'failed']);
    expect((results![0] as { error: Error }).error.message).toMatch(/nacked/);
    await transport.close?.();
  });

  it('a nacked message fails alone: the rest of its batch is sent', async () => {
    const { exchange, queue } = await admin.topic('ok.#');
    const full = uniqueName('full');
    // A second queue on the same exchange, full and rejecting, for one routing key only.
    const amqp = await import('amqplib');
    const m = await amqp.connect(RABBITMQ_URL);
    const ch = await m.createChannel();
    await ch.assertQueue(full, {
      durable: true,
      arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' },
    });
    await ch.bindQueue(full, exchange, 'full.#');
    const transport = rabbitmq({
      url: RABBITMQ_URL,
      exchange,
      routingKey: (e) => ((e.payload as { n: number }).n % 2 === 0 ? 'full.x' : 'ok.x'),
    });
    const events = [1, 2, 3, 4, 5].map((n) => conformanceEvent({ payload: { n } }));
    const results = await transport.deliverBatch!(conformanceItems(events), { signal: never });
    expect(results!.map((r) => r.status)).toEqual(['sent', 'failed', 'sent', 'failed', 'sent']);
    expect((await admin.drain(queue)).map((x) => JSON.parse(x.content.toString()).n)).toEqual([
      1, 3, 5,
    ]);
    await ch.deleteQueue(full);
    await m.close();
    await transport.close?.();
  });

  it('a channel the broker closes is reopened by the next batch', async () => {
    const { exchange, queue } = await admin.topic('#');
    const transport = rabbitmq({ url: RABBITMQ_URL, exchange });
    expect(
      await transport.deliverBatch!(conformanceItems([conformanceEvent()]), { signal: never }),
    ).toEqual([{ status: 'sent' }]);
    // Close the channel from the broker's side: publishing to an exchange deleted under the
    // transport makes the broker close its channel (404).
    const amqp = await import('amqplib');
    const m = await amqp.connect(RABBITMQ_URL);
    const ch = await m.createChannel();
    await ch.deleteExchange(exchange);
    const lost = await transport.deliverBatch!(conformanceItems([conformanceEvent()]), {
      signal: never,
    });
    expect(lost!.map((r) => r.status)).toEqual(['failed']);
    await ch.assertExchange(exchange, 'topic', { durable: true });
    await ch.bindQueue(queue, exchange, '#');
    const again = await transport.deliverBatch!(conformanceItems([conformanceEvent()]), {
      signal: never,
    });
    expect(again).toEqual([{ status: 'sent' }]);
    await m.close();
    expect(await admin.drain(queue)).toHaveLength(2);
    await transport.close?.();
  });
});

describeEachDialect('rabbitmq() through an outbox', (dialect) => {
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
      tablePrefix: `rmq_${Math.random().toString(36).slice(2, 8)}_`,
    });
    await outbox.migrate();
    return outbox;
  }

  it('delivers every event persistent, with its id, headers and routing key, in order per key', async () => {
    const { exchange, queue } = await admin.topic('shop.#');
    const outbox = await outboxTo(rabbitmq({ url: RABBITMQ_URL, exchange }));
    const fired = [];
    for (let step = 0; step < 6; step++) {
      const order = step % 2 === 0 ? 'o-1' : 'o-2';
      fired.push(
        await outbox.fire(
          'shop.OrderPlaced',
          { order, step },
          { orderingKey: order, headers: { 'x-step': String(step) } },
        ),
      );
    }
    const counts = await drainOutbox(outbox);
    expect(counts.succeeded).toBe(6);
    const got = await admin.drain(queue);
    expect(got.map((m) => m.properties.messageId).sort()).toEqual(fired.map((e) => e.id).sort());
    for (const m of got) {
      expect(m.properties.deliveryMode).toBe(2);
      expect(m.fields.routingKey).toBe('shop.OrderPlaced');
      const h = asReceived(m).headers;
      expect(h['outbox-event-id']).toBe(m.properties.messageId);
      expect(h['x-step']).toBe(String(JSON.parse(m.content.toString()).step));
    }
    for (const key of ['o-1', 'o-2'])
      expect(
        got.filter((m) => asReceived(m).orderingKey === key).map((m) => m.properties.messageId),
      ).toEqual(fired.filter((e) => e.orderingKey === key).map((e) => e.id));
    await outbox.close();
  });

  it('a message the broker nacks is recorded failed, not succeeded', async () => {
    const { exchange } = await admin.topic('#', {
      'x-max-length': 0,
      'x-overflow': 'reject-publish',
    });
    const outbox = await outboxTo(rabbitmq({ url: RABBITMQ_URL, exchange }));
    await outbox.fire('shop.OrderPlaced', { order: 'o-9', step: 0 });
    await drainOutbox(outbox, { respectBackoff: true });
    const [row] = await rowsOf(outbox, 'shop.bus');
    expect(row.status).toBe('failed');
    expect(row.lastError).toMatch(/nacked/);
    await outbox.close();
  });

  it('the broker unreachable mid-run: failures recorded and retried, everything delivered after recovery, nothing lost', async () => {
    const { exchange, queue } = await admin.topic('shop.#');
    const proxy = await cuttableProxy();
    const outbox = await outboxTo(rabbitmq({ url: proxy.url, exchange, connectTimeoutMs: 1_000 }));
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
              {
                orderingKey: `o-${step % 3}`,
              },
            )
          ).id,
        );
      for (let step = 0; step < 5; step++) await fire(step);
      await waitFor(
        async () => (await rowsOf(outbox, 'shop.bus')).every((r) => r.status === 'succeeded'),
        'the first events to be delivered',
      );
      proxy.cut();
      for (let step = 5; step < 12; step++) await fire(step);
      await waitFor(
        async () => (await rowsOf(outbox, 'shop.bus')).some((r) => r.attempts >= 2),
        'the relay to record failures and retry them',
        15_000,
      );
      const during = await rowsOf(outbox, 'shop.bus');
      // Recorded failures: a row being retried right now reads 'claimed', but keeps its
      // last error and its spent attempts.
      expect(
        during.filter((r) => r.status !== 'succeeded' && r.attempts >= 1 && r.lastError !== null)
          .length,
      ).toBeGreaterThan(0);
      expect(during.filter((r) => r.lastError?.includes('guest:guest'))).toEqual([]);
      proxy.restore();
      await waitFor(
        async () => (await rowsOf(outbox, 'shop.bus')).every((r) => r.status === 'succeeded'),
        'every event to be delivered after the broker is back',
        20_000,
      );
      const got = (await admin.drain(queue)).map((m) => m.properties.messageId as string);
      // At least once: every event arrived; a retry may have sent one twice.
      expect([...new Set(got)].sort()).toEqual([...ids].sort());
      // In order per key, counting each event's first arrival.
      for (const key of ['o-0', 'o-1', 'o-2']) {
        const firsts = [...new Set(got)].filter((id) =>
          ids.filter((_, i) => `o-${i % 3}` === key).includes(id),
        );
        expect(firsts).toEqual(ids.filter((_, i) => `o-${i % 3}` === key));
      }
    } finally {
      stop.abort();
      await running.catch(() => {});
      await outbox.close();
      await proxy.close();
    }
  }, 60_000);
});
