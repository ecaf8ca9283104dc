import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { OutboxEvent } from '../../src/declare/types.js';
import {
  AnyEvent,
  defineOutbox,
  event,
  type OutboxDelivery,
  parseRedisStreamEntry,
  REDIS_STREAM_FIELDS,
  type RedisStreamsClient,
  receiver,
  redisStreamFields,
  redisStreams,
} from '../../src/index.js';
import {
  conformanceEvent,
  conformanceItems,
  type ReceivedMessage,
  type TransportFactory,
  transportConformance,
} from '../../testing/conformance/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { openOutbox, rowsOf } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  REDIS_URL,
  type RedisProxy,
  redisProxy,
  testRedis,
  uniqueRedisName,
} from '../support/redis.js';

/** A stream's entries, read back the way a consumer reads them. */
async function readStream(redis: Redis, stream: string) {
  const entries = await redis.xrange(stream, '-', '+');
  return entries.map(([entryId, fields]) => ({ entryId, ...parseRedisStreamEntry(fields) }));
}

let reader: Redis;
beforeAll(() => {
  reader = testRedis();
});
afterAll(async () => {
  await reader.quit();
});

describe('redisStreams: options', () => {
  it('refuses options it cannot work with, before anything connects, naming the option', () => {
    expect(() => redisStreams({})).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: redisStreams() takes a url or a client, exactly one (got neither)]`,
    );
    expect(() =>
      redisStreams({ url: 'redis://127.0.0.1:6379', client: reader }),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: redisStreams() takes a url or a client, exactly one (got both)]`,
    );
    expect(() => redisStreams({ url: 'redis://127.0.0.1', stream: '' })).toThrow(
      /stream\b.*non-empty string or a function/,
    );
    expect(() =>
      redisStreams({ url: 'redis://127.0.0.1', maxLength: 0 }),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: redisStreams({ maxLength }) must be an integer ≥ 1 (got 0)]`,
    );
  });

  it('names a wrong URL without repeating the password in it', () => {
    let message = '';
    try {
      redisStreams({ url: 'http://user:hunter2@cache.internal:6379' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatchInlineSnapshot(
      `"redisStreams({ url }) must be a redis:// or rediss:// URL (got http://cache.internal:6379)"`,
    );
    expect(message).not.toContain('hunter2');
  });

  it('an entry carries id, topic, ordering_key, headers and payload, and reads back whole', () => {
    const e = conformanceEvent({
      orderingKey: 'order-1',
      headers: { 'x-trace-id': 'abc', attempt: 2 },
      payload: { total: 12.5, at: '2031-01-01T00:00:00.000Z' },
    });
    const fields = redisStreamFields(e);
    expect(fields.filter((_, i) => i % 2 === 0)).toEqual(Object.values(REDIS_STREAM_FIELDS));
    expect(parseRedisStreamEntry(fields)).toEqual({
      eventId: e.id,
      topic: e.name,
      orderingKey: 'order-1',
      headers: {
        'x-trace-id': 'abc',
        attempt: '2',
        'outbox-event-id': e.id,
        'outbox-topic': e.name,
      },
      payload: { total: 12.5, at: '2031-01-01T00:00:00.000Z' },
    });
    // Without an ordering key the field is left out, and reads back as null.
    const keyless = redisStreamFields(conformanceEvent());
    expect(keyless).not.toContain(REDIS_STREAM_FIELDS.orderingKey);
    expect(parseRedisStreamEntry(keyless).orderingKey).toBeNull();
  });
});

/**
 * The transport behind a cuttable proxy, writing to a stream of the run's own; an event
 * the check wants refused goes to a key holding a string, which Redis answers WRONGTYPE.
 */
function factory(how: 'url' | 'client'): TransportFactory {
  return async ({ runId }) => {
    const proxy = await redisProxy();
    const stream = `obk:conformance:${runId}`;
    const notAStream = `${stream}:string`;
    const refused = new Set<string>();
    const client = how === 'client' ? testRedis(proxy.url) : undefined;
    const transport = redisStreams({
      ...(client ? { client } : { url: proxy.url }),
      stream: (e) => (refused.has(e.id) ? notAStream : stream),
    });
    return {
      transport,
      received: async (): Promise<ReceivedMessage[]> =>
        (await readStream(reader, stream)).map((m) => ({
          eventId: m.eventId,
          name: m.topic,
          payload: m.payload,
          headers: m.headers,
          orderingKey: m.orderingKey,
        })),
      failDestination: async () => proxy.cut(),
      restoreDestination: async () => proxy.restore(),
      async failEvents(ids) {
        await reader.set(notAStream, 'a string, not a stream');
        for (const id of ids) refused.add(id);
      },
      stallDestination: async () => proxy.stall(),
      async cleanup() {
        // A client given is the caller's: close() left it open, and it still answers.
        if (client) {
          proxy.restore();
          expect(client.status).not.toBe('end');
          client.disconnect();
        }
        await proxy.close();
        await reader.del(stream, notAStream);
      },
    };
  };
}

transportConformance('redisStreams({ url })', factory('url'));
transportConformance('redisStreams({ client })', factory('client'));

describe('redisStreams: sending', () => {
  const never = new AbortController().signal;

  it('adds each event to the stream named by the event by default', async () => {
    const names = [uniqueRedisName('obk-a'), uniqueRedisName('obk-b')];
    const transport = redisStreams({ client: reader });
    const events = [
      conformanceEvent({ name: names[0] }),
      conformanceEvent({ name: names[1] }),
      conformanceEvent({ name: names[0] }),
    ];
    try {
      const results = await transport.deliverBatch!(conformanceItems(events, never), {
        signal: never,
      });
      expect(results).toEqual(events.map(() => ({ status: 'sent' })));
      expect((await readStream(reader, names[0])).map((m) => m.eventId)).toEqual([
        events[0].id,
        events[2].id,
      ]);
      expect((await readStream(reader, names[1])).map((m) => m.topic)).toEqual([names[1]]);
    } finally {
      await transport.close!();
      await reader.del(...names);
    }
    // The client given is not closed with the transport.
    expect(await reader.ping()).toBe('PONG');
  });

  it('an item whose stream function throws fails alone; the rest of the batch is sent', async () => {
    const stream = uniqueRedisName('obk-fn');
    const transport = redisStreams({
      client: reader,
      stream: (e) => {
        if ((e.payload as { n: number }).n < 0) throw new Error('no stream for a refund');
        return stream;
      },
    });
    const events = [
      conformanceEvent({ payload: { n: 1 } }),
      conformanceEvent({ payload: { n: -1 } }),
      conformanceEvent({ payload: { n: 2 } }),
    ];
    const results = await transport.deliverBatch!(conformanceItems(events, never), {
      signal: never,
    });
    expect(results?.map((r) => r.status)).toEqual(['sent', 'failed', 'sent']);
    expect((await readStream(reader, stream)).map((m) => m.eventId)).toEqual([
      events[0].id,
      events[2].id,
    ]);
    await reader.del(stream);
  });
});

describe('redisStreams: one script run per batch, the pipeline where scripts are not to be had', () => {
  const never = new AbortController().signal;
  const keyed = (stream: string) =>
    [
      conformanceEvent({ orderingKey: 'k-1', payload: { n: 1 } }),
      conformanceEvent({ payload: { n: 2 } }),
      conformanceEvent({ orderingKey: 'k-1', payload: { n: 3 } }),
    ].map((event) => ({ event, stream }));

  /** A client of `reader`'s connection that says which of its commands the transport used. */
  function counted(options: { scripts: boolean; cluster?: boolean }) {
    const used = { evalsha: 0, eval: 0, pipeline: 0 };
    const client: RedisStreamsClient = {
      pipeline: () => {
        used.pipeline += 1;
        return reader.pipeline();
      },
      ...(options.scripts
        ? {
            evalsha: (sha: string, n: number, ...args: (string | number)[]) => {
              used.evalsha += 1;
              return reader.evalsha(sha, n, ...args);
            },
            eval: (text: string, n: number, ...args: (string | number)[]) => {
              used.eval += 1;
              return reader.eval(text, n, ...args);
            },
          }
        : {}),
      ...(options.cluster ? { isCluster: true } : {}),
    };
    return { client, used };
  }

  it('a batch is one EVALSHA (EVAL the first time Redis lacks the script); entries read back as the pipeline writes them', async () => {
    const streams = [uniqueRedisName('obk-script'), uniqueRedisName('obk-pipe')];
    // A trim of its own makes a script text Redis has never seen: the first send finds it
    // missing and sends the text.
    const maxLength = 1_000_000 + Math.floor(Math.random() * 1_000_000);
    const viaScript = counted({ scripts: true });
    const viaPipeline = counted({ scripts: false });
    const byScript = redisStreams({ client: viaScript.client, stream: streams[0], maxLength });
    const byPipeline = redisStreams({ client: viaPipeline.client, stream: streams[1], maxLength });
    try {
      const batch = keyed('');
      for (const transport of [byScript, byPipeline]) {
        for (let round = 0; round < 2; round++) {
          const results = await transport.deliverBatch!(
            conformanceItems(
              batch.map((b) => b.event),
              never,
            ),
            { signal: never },
          );
          expect(results).toEqual(batch.map(() => ({ status: 'sent' })));
        }
      }
      expect(viaScript.used).toEqual({ evalsha: 2, eval: 1, pipeline: 0 });
      expect(viaPipeline.used).toEqual({ evalsha: 0, eval: 0, pipeline: 2 });
      const strip = (m: { entryId: string }) => ({ ...m, entryId: undefined });
      const [scripted, piped] = await Promise.all(streams.map((s) => readStream(reader, s)));
      expect(scripted.map(strip)).toEqual(piped.map(strip));
      expect(scripted.map((m) => [m.orderingKey, (m.payload as { n: number }).n])).toEqual([
        ['k-1', 1],
        [null, 2],
        ['k-1', 3],
        ['k-1', 1],
        [null, 2],
        ['k-1', 3],
      ]);
      // The raw fields too: the script writes the same field list, ordering_key left out.
      const raw = (await reader.xrange(streams[0], '-', '+'))[1][1];
      expect(raw).toEqual(redisStreamFields(batch[1].event));
    } finally {
      await reader.del(...streams);
    }
  });

  it('a batch larger than one script run takes goes as several runs, in order', async () => {
    const stream = uniqueRedisName('obk-large');
    const viaScript = counted({ scripts: true });
    const transport = redisStreams({ client: viaScript.client, stream });
    try {
      const events = Array.from({ length: 4_500 }, (_, n) =>
        conformanceEvent({ orderingKey: `k-${n % 7}`, payload: { n } }),
      );
      const results = await transport.deliverBatch!(conformanceItems(events, never), {
        signal: never,
      });
      expect(results?.every((r) => r.status === 'sent')).toBe(true);
      expect(viaScript.used.evalsha).toBe(3);
      expect((await readStream(reader, stream)).map((m) => m.eventId)).toEqual(
        events.map((e) => e.id),
      );
    } finally {
      await reader.del(stream);
    }
  });

  it("a cluster client sends by pipeline (a script's keys would have to share a slot)", async () => {
    const stream = uniqueRedisName('obk-cluster');
    const viaCluster = counted({ scripts: true, cluster: true });
    const transport = redisStreams({ client: viaCluster.client, stream });
    try {
      const events = keyed(stream).map((b) => b.event);
      expect(
        await transport.deliverBatch!(conformanceItems(events, never), { signal: never }),
      ).toEqual(events.map(() => ({ status: 'sent' })));
      expect(viaCluster.used).toEqual({ evalsha: 0, eval: 0, pipeline: 1 });
      expect((await readStream(reader, stream)).map((m) => m.eventId)).toEqual(
        events.map((e) => e.id),
      );
    } finally {
      await reader.del(stream);
    }
  });

  it('a user Redis refuses scripts to (ACL) is sent to by pipeline, from that batch on', async () => {
    const user = uniqueRedisName('obk-noscript').replace(':', '-');
    const stream = uniqueRedisName('obk-acl');
    await reader.acl('SETUSER', user, 'on', 'nopass', '~*', '&*', '+@all', '-evalsha', '-eval');
    const url = new URL(REDIS_URL);
    url.username = user;
    const transport = redisStreams({ url: url.toString(), stream });
    try {
      for (let round = 0; round < 2; round++) {
        const events = keyed(stream).map((b) => b.event);
        expect(
          await transport.deliverBatch!(conformanceItems(events, never), { signal: never }),
        ).toEqual(events.map(() => ({ status: 'sent' })));
      }
      expect(await reader.xlen(stream)).toBe(6);
    } finally {
      await transport.close!();
      await reader.acl('DELUSER', user);
      await reader.del(stream);
    }
  });

  it('in one script run, an entry Redis refuses fails alone, and the others keep their order', async () => {
    const stream = uniqueRedisName('obk-mixed');
    const notAStream = `${stream}:string`;
    await reader.set(notAStream, 'a string, not a stream');
    const events = Array.from({ length: 5 }, (_, n) =>
      conformanceEvent({ orderingKey: `k-${n % 2}`, payload: { n } }),
    );
    const transport = redisStreams({
      client: reader,
      stream: (e) => ((e.payload as { n: number }).n === 2 ? notAStream : stream),
    });
    try {
      const results = await transport.deliverBatch!(conformanceItems(events, never), {
        signal: never,
      });
      expect(results?.map((r) => r.status)).toEqual(['sent', 'sent', 'failed', 'sent', 'sent']);
      expect(String((results?.[2] as { error?: unknown } | undefined)?.error)).toMatch(/WRONGTYPE/);
      expect((await readStream(reader, stream)).map((m) => m.eventId)).toEqual(
        [0, 1, 3, 4].map((n) => events[n].id),
      );
    } finally {
      await reader.del(stream, notAStream);
    }
  });
});

describeEachDialect('redisStreams through an outbox', (dialect) => {
  let db: TestDatabase;
  let proxy: RedisProxy;
  beforeAll(async () => {
    db = await dialect.open();
    proxy = await redisProxy();
  });
  afterAll(async () => {
    await proxy.close();
    await db.cleanup();
  });

  const Placed = event({ schema: z.object({ orderId: z.string(), step: z.number() }) });
  const Shipped = event({ schema: z.object({ orderId: z.string(), step: z.number() }) });

  /** An outbox whose one wildcard receiver sends everything to Redis through the proxy. */
  async function setup(options: { maxLength?: number } = {}) {
    const prefix = uniqueRedisName('obk-e2e');
    const streamOf = (e: OutboxEvent) => `${prefix}:${e.name}`;
    const transport: OutboxDelivery = redisStreams({
      url: proxy.url,
      stream: streamOf,
      ...options,
    });
    const config = defineOutbox({
      events: { 'shop.OrderPlaced': Placed, 'shop.OrderShipped': Shipped },
      receivers: { 'shop.toRedis': receiver(AnyEvent, { deliver: transport }) },
    });
    const outbox = await openOutbox(db, config);
    const streams = [`${prefix}:shop.OrderPlaced`, `${prefix}:shop.OrderShipped`];
    return {
      outbox,
      streams,
      read: (name: 'shop.OrderPlaced' | 'shop.OrderShipped') =>
        readStream(reader, `${prefix}:${name}`),
      async close() {
        await outbox.close();
        await reader.del(...streams);
      },
    };
  }

  it('entries arrive in order per ordering key, each with the event id, topic, key, headers and payload', async () => {
    const s = await setup();
    try {
      const fired: OutboxEvent[] = [];
      for (let step = 1; step <= 4; step++) {
        for (const orderId of ['o-1', 'o-2', 'o-3']) {
          fired.push(
            await s.outbox.fire(
              'shop.OrderPlaced',
              { orderId, step },
              { orderingKey: orderId, headers: { 'x-tenant': 'acme', 'x-step': step } },
            ),
          );
        }
      }
      const shipped = await s.outbox.fire('shop.OrderShipped', { orderId: 'o-1', step: 5 });
      expect(await drainOutbox(s.outbox)).toMatchObject({ succeeded: 13, failed: 0 });

      const placed = await s.read('shop.OrderPlaced');
      expect(placed).toHaveLength(12);
      for (const orderId of ['o-1', 'o-2', 'o-3']) {
        const ofKey = placed.filter((m) => m.orderingKey === orderId);
        expect(ofKey.map((m) => (m.payload as { step: number }).step)).toEqual([1, 2, 3, 4]);
        expect(ofKey.map((m) => m.eventId)).toEqual(
          fired.filter((f) => f.orderingKey === orderId).map((f) => f.id),
        );
      }
      const first = placed.find((m) => m.eventId === fired[0].id)!;
      expect(first).toMatchObject({
        topic: 'shop.OrderPlaced',
        orderingKey: 'o-1',
        payload: { orderId: 'o-1', step: 1 },
      });
      expect(first.headers).toMatchObject({
        'x-tenant': 'acme',
        'x-step': '1',
        'outbox-event-id': fired[0].id,
        'outbox-topic': 'shop.OrderPlaced',
      });
      expect(await s.read('shop.OrderShipped')).toEqual([
        expect.objectContaining({ eventId: shipped.id, orderingKey: null }),
      ]);
    } finally {
      await s.close();
    }
  });

  it('a batch goes to Redis through one pipeline: one round trip for all its entries', async () => {
    const s = await setup();
    try {
      // Connect first: the connection's own handshake is not the batch's.
      await s.outbox.fire('shop.OrderPlaced', { orderId: 'warm-up', step: 0 });
      await drainOutbox(s.outbox);
      proxy.takeTurns();

      await s.outbox.fireMany(
        Array.from({ length: 25 }, (_, i) => ({
          name: 'shop.OrderPlaced' as const,
          payload: { orderId: `o-${i}`, step: 1 },
          orderingKey: `o-${i}`,
        })),
      );
      expect(await drainOutbox(s.outbox)).toMatchObject({ succeeded: 25 });
      expect(proxy.takeTurns()).toBe(1);
      expect(await reader.xlen(s.streams[0])).toBe(26);

      // The count tells the two apart: commands awaited one by one are a turn each.
      const direct = testRedis(proxy.url);
      await direct.ping();
      proxy.takeTurns();
      await direct.xadd(s.streams[1], '*', 'n', '1');
      await direct.xadd(s.streams[1], '*', 'n', '2');
      expect(proxy.takeTurns()).toBe(2);
      direct.disconnect();
    } finally {
      await s.close();
    }
  });

  it('trims each stream to about maxLength (MAXLEN ~), keeping the newest entries', async () => {
    const s = await setup({ maxLength: 50 });
    try {
      const fired = await s.outbox.fireMany(
        Array.from({ length: 400 }, (_, i) => ({
          name: 'shop.OrderPlaced' as const,
          payload: { orderId: `o-${i}`, step: i },
        })),
      );
      expect(await drainOutbox(s.outbox)).toMatchObject({ succeeded: 400 });
      const length = await reader.xlen(s.streams[0]);
      // Approximate: at least maxLength, less than one internal node (100 entries) over it.
      expect(length).toBeGreaterThanOrEqual(50);
      expect(length).toBeLessThan(50 + 100);
      const kept = await s.read('shop.OrderPlaced');
      expect(kept.at(-1)?.eventId).toBe(fired.at(-1)?.id);
      expect(kept.map((m) => m.eventId)).toEqual(fired.slice(-length).map((f) => f.id));
    } finally {
      await s.close();
    }
  });

  it('Redis unreachable mid-run: the failures are recorded and retried, and everything arrives after recovery, once, in order', async () => {
    const s = await setup();
    try {
      const fire = (orderId: string, step: number) =>
        s.outbox.fire('shop.OrderPlaced', { orderId, step }, { orderingKey: orderId });
      const fired = [await fire('o-1', 1), await fire('o-2', 1)];
      expect(await drainOutbox(s.outbox)).toMatchObject({ succeeded: 2 });

      proxy.cut();
      fired.push(await fire('o-1', 2), await fire('o-2', 2), await fire('o-1', 3));
      // One attempt each, as a relay makes them: the first of each key fails (the later
      // one of o-1 waits behind it), and nothing is recorded sent.
      expect(await drainOutbox(s.outbox, { respectBackoff: true })).toMatchObject({
        succeeded: 0,
        failed: 2,
      });
      const failedRows = (await rowsOf(s.outbox, 'shop.toRedis')).filter(
        (r) => r.status === 'failed',
      );
      expect(failedRows).toHaveLength(2);
      for (const row of failedRows) {
        expect(row.attempts).toBe(1);
        expect(row.lastError).toMatch(/max retries per request|Connection is closed|ECONN/i);
      }
      expect(await reader.xlen(s.streams[0])).toBe(2);

      proxy.restore();
      expect(await drainOutbox(s.outbox)).toMatchObject({ succeeded: 3, failed: 0 });
      const entries = await s.read('shop.OrderPlaced');
      // Nothing lost and, the cut having found no command in flight, nothing twice.
      expect(entries.map((m) => m.eventId).sort()).toEqual(fired.map((f) => f.id).sort());
      for (const key of ['o-1', 'o-2'])
        expect(entries.filter((m) => m.orderingKey === key).map((m) => m.eventId)).toEqual(
          fired.filter((f) => f.orderingKey === key).map((f) => f.id),
        );
      expect(
        (await rowsOf(s.outbox, 'shop.toRedis')).map((r) => [r.status, r.attempts]).sort(),
      ).toEqual([
        ['succeeded', 1],
        ['succeeded', 1],
        ['succeeded', 1],
        ['succeeded', 2],
        ['succeeded', 2],
      ]);
    } finally {
      proxy.restore();
      await s.close();
    }
  });
});
