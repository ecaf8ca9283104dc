/**
 * Redis itself restarted mid-run, not a connection cut: a private redis-server of the test's
 * own (on a free port, its append-only file in a temp directory, so the stream survives the
 * restart as a production Redis with persistence does) is shut down while events are owed
 * and started again on the same port and directory.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AnyEvent,
  defineOutbox,
  event,
  parseRedisStreamEntry,
  receiver,
  redisStreams,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { openOutbox, rowsOf } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import { testRedis } from '../support/redis.js';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A redis-server of the test's own: start() and stop() it as often as the test needs. */
function privateRedis(port: number, dir: string) {
  let child: ChildProcess | undefined;
  return {
    url: `redis://127.0.0.1:${port}`,
    async start() {
      child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'yes',
          '--appendfsync',
          'always',
        ],
        { stdio: 'ignore' },
      );
      const probe = testRedis(`redis://127.0.0.1:${port}`);
      try {
        for (let i = 0; i < 100; i++) {
          if (
            await probe.ping().then(
              () => true,
              () => false,
            )
          )
            return;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error(`redis-server on ${port} did not start`);
      } finally {
        probe.disconnect();
      }
    },
    async stop() {
      const running = child;
      if (!running || running.exitCode !== null) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      running.kill('SIGTERM'); // a clean shutdown: the append-only file is flushed
      await exited;
    },
  };
}

describeEachDialect('redisStreams when Redis itself restarts', (dialect) => {
  let db: TestDatabase;
  let dir: string;
  let redis: ReturnType<typeof privateRedis>;
  let reader: Redis;
  beforeAll(async () => {
    db = await dialect.open();
    dir = mkdtempSync(join(tmpdir(), 'outbox-redis-'));
    redis = privateRedis(await freePort(), dir);
    await redis.start();
    reader = testRedis(redis.url);
  });
  afterAll(async () => {
    reader?.disconnect();
    await redis?.stop();
    await db.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const Placed = event({ schema: z.object({ orderId: z.string(), step: z.number() }) });

  it('Redis restarted mid-run: failures are recorded and retried, and everything arrives after it is back, in order per key', async () => {
    const transport = redisStreams({ url: redis.url, stream: 'orders' });
    const config = defineOutbox({
      events: { 'shop.OrderPlaced': Placed },
      receivers: { 'shop.toRedis': receiver(AnyEvent, { deliver: transport }) },
    });
    const outbox = await openOutbox(db, config);
    const fire = (orderId: string, step: number) =>
      outbox.fire('shop.OrderPlaced', { orderId, step }, { orderingKey: orderId });
    try {
      const fired = [await fire('o-1', 1), await fire('o-2', 1)];
      expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 2 });

      reader.disconnect();
      await redis.stop();
      fired.push(await fire('o-1', 2), await fire('o-2', 2), await fire('o-1', 3));
      expect(await drainOutbox(outbox, { respectBackoff: true })).toMatchObject({
        succeeded: 0,
        failed: 2,
      });
      const failed = (await rowsOf(outbox, 'shop.toRedis')).filter((r) => r.status === 'failed');
      expect(failed).toHaveLength(2);
      for (const row of failed) expect(row.lastError).toMatch(/ECONNREFUSED|closed|retries/i);

      await redis.start();
      reader = testRedis(redis.url);
      expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 3, failed: 0 });
      const entries = (await reader.xrange('orders', '-', '+')).map(([, fields]) =>
        parseRedisStreamEntry(fields),
      );
      // The two sent before the restart survived it (append-only file); nothing is lost.
      expect(entries.map((e) => e.eventId).sort()).toEqual(fired.map((f) => f.id).sort());
      for (const key of ['o-1', 'o-2'])
        expect(entries.filter((e) => e.orderingKey === key).map((e) => e.eventId)).toEqual(
          fired.filter((f) => f.orderingKey === key).map((f) => f.id),
        );
      expect((await rowsOf(outbox, 'shop.toRedis')).every((r) => r.status === 'succeeded')).toBe(
        true,
      );
      await reader.del('orders');
    } finally {
      await outbox.close();
    }
  });
});
