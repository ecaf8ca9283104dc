/**
 * The inbox behind each of our transports, against the real servers: the outbox sends an
 * event, `replayEvents` sends it again (a redelivery, as a consumer sees one: a second
 * message with the same event id), and a consumer using `inbox` processes it once.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AnyEvent,
  defineOutbox,
  event,
  fromRabbitmq,
  fromRedisStreams,
  fromWebhook,
  type OutboxDelivery,
  rabbitmq,
  receiver,
  redisStreams,
  webhook,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { openOutbox } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import { testRedis, uniqueRedisName } from '../support/redis.js';
import { brokerAdmin, RABBITMQ_URL } from '../transports/rabbitmq-support.js';
import { openConsumer } from './support.js';

const Placed = event({ schema: z.object({ orderId: z.string() }) });

describeEachDialect('inbox end to end', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(async () => {
    await db?.cleanup();
  });

  /** An outbox whose one wildcard receiver is `transport`, and a consumer beside it. */
  async function setup(transport: OutboxDelivery) {
    const config = defineOutbox({
      events: { 'shop.OrderPlaced': Placed },
      receivers: { 'shop.out': receiver(AnyEvent, { deliver: transport }) },
    });
    const outbox = await openOutbox(db, config);
    const consumer = await openConsumer(db, { consumer: 'billing' });
    return { outbox, consumer };
  }

  it('redisStreams: a replayed event arrives twice in the stream, and the consumer processes it once', async () => {
    const redis = testRedis();
    const stream = uniqueRedisName('obk-inbox');
    const { outbox, consumer } = await setup(redisStreams({ client: redis, stream }));
    try {
      const fired = await outbox.fire('shop.OrderPlaced', { orderId: 'o-1' });
      let last = '-';
      /** The consumer: read what is new in the stream, handle each entry through the inbox. */
      const consume = async () => {
        const entries = await redis.xrange(stream, last === '-' ? '-' : `(${last}`, '+');
        const statuses: string[] = [];
        for (const [entryId, fields] of entries) {
          const r = await consumer.inbox.handle(fromRedisStreams(fields), (t) =>
            consumer.record(t, fromRedisStreams(fields).id, `entry ${entryId}`),
          );
          statuses.push(r.status);
          last = entryId;
        }
        return statuses;
      };
      expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 1 });
      expect(await consume()).toEqual(['processed']);

      expect(await outbox.replayEvents([fired])).toMatchObject({ reopened: 1 });
      expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 1 });
      expect(await redis.xlen(stream)).toBe(2);
      expect(await consume()).toEqual(['duplicate']);

      const work = await consumer.work();
      expect(work).toHaveLength(1);
      expect(work[0][0]).toBe(fired.id);
      expect(await consumer.rows()).toMatchObject([
        { consumer: 'billing', event_id: fired.id, topic: 'shop.OrderPlaced' },
      ]);
    } finally {
      await outbox.close();
      await redis.del(stream);
      redis.disconnect();
    }
  });

  it('rabbitmq: a replayed event is published twice, and the consumer processes it once', async () => {
    const admin = await brokerAdmin();
    const { exchange, queue } = await admin.topic('#');
    const { outbox, consumer } = await setup(rabbitmq({ url: RABBITMQ_URL, exchange }));
    try {
      const fired = await outbox.fire('shop.OrderPlaced', { orderId: 'o-1' });
      const consume = async () => {
        const statuses: string[] = [];
        for (const message of await admin.drain(queue)) {
          const m = fromRabbitmq(message);
          statuses.push((await consumer.inbox.handle(m, (t) => consumer.record(t, m.id))).status);
        }
        return statuses;
      };
      expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 1 });
      expect(await consume()).toEqual(['processed']);
      await outbox.replayEvents([fired]);
      expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 1 });
      expect(await consume()).toEqual(['duplicate']);
      expect(await consumer.work()).toEqual([[fired.id, 'done']]);
    } finally {
      await outbox.close();
      await admin.cleanup();
    }
  });

  it('webhook: a replayed event is posted twice to a signed endpoint, and the endpoint processes it once', async () => {
    const secret = 'whsec-inbox-e2e';
    let server: Server | undefined;
    const answers: { status: number; body: string }[] = [];
    const { outbox, consumer } = await (async () => {
      // The consumer's endpoint: check the signature over the raw body, then the inbox.
      let handler: (body: Buffer, headers: Record<string, unknown>) => Promise<[number, string]> =
        async () => [503, 'not ready'];
      server = createServer(async (req, res) => {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        const [status, body] = await handler(Buffer.concat(chunks), req.headers);
        answers.push({ status, body });
        res.writeHead(status, { 'content-type': 'text/plain' }).end(body);
      });
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/orders`;
      const made = await setup(
        webhook({ url, secret, allowsAddress: (address) => address === '127.0.0.1' }),
      );
      handler = async (body, headers) => {
        let message: ReturnType<typeof fromWebhook>;
        try {
          message = fromWebhook(headers as never, body, { secret });
        } catch (error) {
          return [401, (error as Error).message];
        }
        const r = await made.consumer.inbox.handle(message, (t) =>
          made.consumer.record(t, message.id),
        );
        return [200, r.status];
      };
      return made;
    })();
    try {
      const fired = await outbox.fire('shop.OrderPlaced', { orderId: 'o-1' });
      expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 1 });
      await outbox.replayEvents([fired]);
      expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 1 });
      expect(answers).toEqual([
        { status: 200, body: 'processed' },
        { status: 200, body: 'duplicate' },
      ]);
      expect(await consumer.work()).toEqual([[fired.id, 'done']]);
    } finally {
      await outbox.close();
      await new Promise((resolve) => server?.close(resolve));
    }
  });
});
