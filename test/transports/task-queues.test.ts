/**
 * Tasks fired through the outbox (the topic-outbox reference's `TaskiqDelivery`):
 * `pgBossTransport` and `bullmqTransport` held to the transport conformance suite on the
 * real queues, and run end to end by a topic relay of their own.
 */
import { Queue, Worker } from 'bullmq';
import PgBoss from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  bullmqTransport,
  defineOutbox,
  event,
  type PgBossClient,
  pgBossTransport,
  receiver,
  type TaskMessage,
} from '../../src/index.js';
import type { ReceivedMessage } from '../../testing/conformance/index.js';
import { transportConformance } from '../../testing/conformance/index.js';
import { postgresTestSchema, postgresUrl, type TestDatabase } from '../../testing/databases.js';
import { openOutbox, rowsOf, shortSleep, waitFor } from '../relay/support.js';
import { REDIS_URL, redisProxy } from '../support/redis.js';

const redisUrl = new URL(REDIS_URL);
const connection = { host: redisUrl.hostname, port: Number(redisUrl.port || 6379) };

const asReceived = (m: TaskMessage): ReceivedMessage => ({
  eventId: m.id,
  name: m.topic,
  payload: m.payload,
  headers: m.headers,
  orderingKey: m.orderingKey,
});

// --- pg-boss: one boss in a schema of this file's own.
let pgDb: TestDatabase;
let boss: PgBoss;
beforeAll(async () => {
  pgDb = await postgresTestSchema();
  boss = new PgBoss({
    connectionString: postgresUrl(),
    schema: pgDb.outboxOptions.schema!,
    max: 4,
    supervise: false,
    schedule: false,
  });
  boss.on('error', () => {});
  await boss.start();
});
afterAll(async () => {
  await boss?.stop({ graceful: false, close: true, wait: true });
  await pgDb?.cleanup();
});

/** The jobs of a pg-boss queue, in the order its workers fetch them. */
async function pgBossJobs(queue: string): Promise<TaskMessage[]> {
  const [rows] = (await pgDb.sequelize.query(
    `SELECT data FROM "${pgDb.outboxOptions.schema}".job WHERE name = $1 ORDER BY priority DESC, created_on, id`,
    { bind: [queue] },
  )) as [{ data: TaskMessage }[], unknown];
  return rows.map((r) => r.data);
}

transportConformance('pgBossTransport', async ({ runId }) => {
  const queue = `tasks_${runId}`;
  let mode: 'up' | 'down' | 'stalled' = 'up';
  // The boss as the transport sees it, failing or hanging on demand (pg-boss itself,
  // shared with the other checks, stays up).
  const client: PgBossClient = {
    createQueue: (name, o) => boss.createQueue(name, o as never),
    insert: (jobs) =>
      mode === 'down'
        ? Promise.reject(new Error('pg-boss is unreachable'))
        : mode === 'stalled'
          ? new Promise(() => {})
          : boss.insert(jobs as never),
    work: () => Promise.reject(new Error('not used')),
    offWork: async () => {},
  };
  return {
    transport: pgBossTransport({ boss: client, queue }),
    received: async () => (await pgBossJobs(queue)).map(asReceived),
    failDestination: async () => {
      mode = 'down';
    },
    restoreDestination: async () => {
      mode = 'up';
    },
    stallDestination: async () => {
      mode = 'stalled';
    },
  };
});

transportConformance('bullmqTransport', async ({ runId }) => {
  const queue = `tasks_${runId}`;
  const proxy = await redisProxy();
  const proxied = new URL(proxy.url);
  const reader = new Queue(queue, { connection });
  return {
    transport: bullmqTransport({
      connection: { host: proxied.hostname, port: Number(proxied.port) },
      queue,
    }),
    received: async () =>
      (await reader.getJobs(['waiting', 'active', 'completed', 'delayed'], 0, -1, true)).map((j) =>
        asReceived(j.data as TaskMessage),
      ),
    failDestination: async () => proxy.cut(),
    restoreDestination: async () => proxy.restore(),
    stallDestination: async () => proxy.stall(),
    async cleanup() {
      await proxy.close();
      await reader.obliterate({ force: true }).catch(() => {});
      await reader.close();
    },
  };
});

const SendInvoice = event({ schema: z.object({ invoice: z.number() }) });
const OrderPlaced = event({ schema: z.object({ order: z.number() }) });

describe('tasks fired through the outbox, run by a topic relay of their own', () => {
  it('pgBossTransport: one job per event, job id = event id, a repeat deduplicated by the queue', async () => {
    const queue = `invoices_${Date.now().toString(36)}`;
    const config = defineOutbox({
      events: { 'tasks.sendInvoice': SendInvoice, 'shop.OrderPlaced': OrderPlaced },
      receivers: {
        'tasks.queue': receiver('tasks.*', { deliver: pgBossTransport({ boss, queue }) }),
        'shop.audit': receiver(OrderPlaced, { handle: () => {} }),
      },
    });
    const outbox = await openOutbox(pgDb, config);
    const fired = await outbox.fire('tasks.sendInvoice', { invoice: 7 });
    await outbox.fire('shop.OrderPlaced', { order: 1 });
    const report = await outbox.runRelay({
      topics: ['tasks.*'],
      untilIdle: true,
      sleep: shortSleep(),
    });
    expect(report.succeeded).toBe(1); // the task only: the order is another relay's
    expect((await rowsOf(outbox, 'shop.audit'))[0].status).toBe('pending');
    const jobs = await pgBossJobs(queue);
    expect(jobs).toMatchObject([
      { id: fired.id, topic: 'tasks.sendInvoice', payload: { invoice: 7 } },
    ]);
    // The relay sends it again (a lost answer, a replay): pg-boss keeps one job.
    await outbox.replayEvents([fired.id]);
    await outbox.runRelay({ topics: ['tasks.*'], untilIdle: true, sleep: shortSleep() });
    expect(await pgBossJobs(queue)).toHaveLength(1);
    // And a pg-boss worker runs it.
    const seen: number[] = [];
    const id = await boss.work<TaskMessage>(
      queue,
      { pollingIntervalSeconds: 0.5 },
      async ([job]) => {
        seen.push((job.data.payload as { invoice: number }).invoice);
      },
    );
    await waitFor(() => seen.length === 1, 'the pg-boss worker to run the task');
    await boss.offWork({ id } as never);
    expect(seen).toEqual([7]);
    await outbox.close();
  }, 30_000);

  it('bullmqTransport: one job per event, job id = event id, a repeat deduplicated by the queue', async () => {
    const queue = `invoices_${Date.now().toString(36)}`;
    const config = defineOutbox({
      events: { 'tasks.sendInvoice': SendInvoice },
      receivers: {
        'tasks.queue': receiver('tasks.*', { deliver: bullmqTransport({ connection, queue }) }),
      },
    });
    const outbox = await openOutbox(pgDb, config);
    const reader = new Queue(queue, { connection });
    try {
      const fired = await outbox.fire('tasks.sendInvoice', { invoice: 8 });
      await outbox.runRelay({ topics: ['tasks.*'], untilIdle: true, sleep: shortSleep() });
      await outbox.replayEvents([fired.id]);
      await outbox.runRelay({ topics: ['tasks.*'], untilIdle: true, sleep: shortSleep() });
      const jobs = await reader.getJobs(['waiting'], 0, -1, true);
      expect(jobs.map((j) => [j.id, j.name, (j.data as TaskMessage).payload])).toEqual([
        [fired.id, 'tasks.sendInvoice', { invoice: 8 }],
      ]);
      const seen: number[] = [];
      const worker = new Worker(
        queue,
        async (job) => void seen.push((job.data as TaskMessage).payload as never),
        { connection },
      );
      await waitFor(() => seen.length === 1, 'the BullMQ worker to run the task');
      await worker.close();
      expect(seen).toEqual([{ invoice: 8 }]);
    } finally {
      await outbox.close();
      await reader.obliterate({ force: true }).catch(() => {});
      await reader.close();
    }
  }, 30_000);
});
