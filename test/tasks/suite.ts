/**
 * The behaviour every task backend owes (issue 30's "done means"), declared once and run
 * against pg-boss and BullMQ on real servers: the relay hands rows off through the backend,
 * the queue's own worker runs them through `deliverOne(id, claim)`, and the outbox row —
 * not the queue — decides what is recorded, retried and dead-lettered.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type {
  DeliveryStatus,
  Outbox,
  TaskBackend,
  TaskHandOff,
  TaskWorker,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import {
  createReceivedTable,
  describePostgres,
  freshPrefix,
  openOutbox,
  receivedIds,
  rowsOf,
  shortSleep,
  waitFor,
} from '../relay/support.js';
import { taskConfig } from './fixtures/task-config.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..');
const LEASE_SECONDS = 30;

/** One queue of a backend, named for one test. */
export interface QueueUnderTest {
  readonly backend: TaskBackend;
  startWorker(
    outbox: Outbox,
    onDelivered: (handOff: TaskHandOff, status: DeliveryStatus | null) => void,
  ): Promise<TaskWorker>;
  /** Put a job carrying this hand-off on the queue again: a duplicate message. */
  enqueueAgain(handOff: TaskHandOff): Promise<void>;
  /** Jobs the queue retried or failed (it must do neither: the row owns retries). */
  queueRetries(): Promise<number>;
  /** What the killed worker's process needs to reach the same queue. */
  readonly childArgs: Record<string, unknown>;
  close(): Promise<void>;
}

export type OpenQueue = (db: TestDatabase, queue: string) => Promise<QueueUnderTest>;

/** A backend that also keeps each hand-off it was given, in order. */
function recording(backend: TaskBackend) {
  const handOffs: TaskHandOff[] = [];
  const wrapped: TaskBackend = {
    name: backend.name,
    async enqueue(handOff) {
      handOffs.push(handOff);
      await backend.enqueue(handOff);
    },
    close: () => backend.close(),
  };
  return { wrapped, handOffs };
}

export function taskBackendSuite(name: string, openQueue: OpenQueue): void {
  describePostgres(`task backend: ${name}`, (dialect) => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await dialect.open();
    });
    afterAll(() => db.cleanup());

    /** A fresh queue, outbox, side-effect table and worker outcome log for one test. */
    async function setup(options: { clockOffsetMs?: { ms: number } } = {}) {
      const queueName = `tasks-${randomBytes(5).toString('hex')}`;
      const queue = await openQueue(db, queueName);
      const table = await createReceivedTable(db, `recv_${randomBytes(4).toString('hex')}`);
      const started: number[] = [];
      const tablePrefix = freshPrefix();
      const { wrapped, handOffs } = recording(queue.backend);
      const offset = options.clockOffsetMs;
      const outbox = await openOutbox(
        db,
        taskConfig({
          sequelize: db.sequelize,
          table,
          leaseSeconds: LEASE_SECONDS,
          onStart: (n) => void started.push(n),
        }),
        {
          tablePrefix,
          taskBackend: wrapped,
          ...(offset ? { clock: () => new Date(Date.now() + offset.ms) } : {}),
        },
      );
      const outcomes: { handOff: TaskHandOff; status: DeliveryStatus | null }[] = [];
      const workers: TaskWorker[] = [];
      const startWorker = async () => {
        workers.push(
          await queue.startWorker(outbox, (handOff, status) => outcomes.push({ handOff, status })),
        );
      };
      const taskRows = () => rowsOf(outbox, 'jobs.task');
      const settled = (n: number) => async () =>
        (await taskRows()).filter((r) => r.status !== 'claimed' && r.status !== 'pending').length >=
        n;
      const cleanup = async () => {
        await Promise.allSettled(workers.map((w) => w.stop()));
        await outbox.close();
        await queue.close();
      };
      return {
        queue,
        queueName,
        outbox,
        table,
        tablePrefix,
        started,
        handOffs,
        outcomes,
        startWorker,
        taskRows,
        settled,
        cleanup,
      };
    }

    it('a row handed off and run by the queue’s worker is recorded once', async () => {
      const t = await setup();
      try {
        const fired = await t.outbox.fireMany(
          Array.from({ length: 20 }, (_, n) => ({ name: 'jobs.Job' as const, payload: { n } })),
        );
        await t.startWorker();
        const counts = await t.outbox.deliverPending();
        expect(counts.succeeded).toBe(0); // the relay records nothing of a handed-off row
        expect(t.handOffs).toHaveLength(20);
        await waitFor(t.settled(20), 'every task row to be recorded');
        expect(await receivedIds(db, t.table)).toEqual(fired.map((e) => e.id).sort());
        expect((await t.taskRows()).map((r) => [r.status, r.attempts])).toEqual(
          fired.map(() => ['succeeded', 1]),
        );
        expect(t.outcomes.map((o) => o.status)).toEqual(fired.map(() => 'succeeded'));
      } finally {
        await t.cleanup();
      }
    }, 30_000);

    it('a duplicate job, and a job for a settled row, do nothing', async () => {
      const t = await setup();
      try {
        const fired = await t.outbox.fire('jobs.Job', { n: 1 });
        await t.startWorker();
        await t.outbox.deliverPending();
        await waitFor(t.settled(1), 'the task to be recorded');
        // The queue carries the same message again (a redelivery): the row has settled.
        await t.queue.enqueueAgain(t.handOffs[0]);
        await waitFor(() => t.outcomes.length === 2, 'the duplicate job to run');
        expect(t.outcomes.map((o) => o.status)).toEqual(['succeeded', null]);
        expect(t.started).toEqual([1]);
        expect(await receivedIds(db, t.table)).toEqual([fired.id]);
        expect(await t.taskRows()).toMatchObject([{ status: 'succeeded', attempts: 1 }]);
      } finally {
        await t.cleanup();
      }
    }, 30_000);

    it('a job held past its lease does nothing; the row is reclaimed and delivered once', async () => {
      const offset = { ms: 0 };
      const t = await setup({ clockOffsetMs: offset });
      try {
        const fired = await t.outbox.fire('jobs.Job', { n: 2 });
        await t.outbox.deliverPending(); // handed off, lease until now + 30 s
        offset.ms = (LEASE_SECONDS + 1) * 1000; // the queue held the job past the lease
        await t.startWorker();
        await waitFor(() => t.outcomes.length === 1, 'the stale job to run');
        expect(t.outcomes[0].status).toBeNull();
        expect(t.started).toEqual([]);
        expect((await t.taskRows())[0].status).toBe('claimed');
        await t.outbox.deliverPending(); // a relay reclaims the lapsed row, hands it off again
        await waitFor(t.settled(1), 'the task to be recorded');
        expect(t.outcomes.map((o) => o.status)).toEqual([null, 'succeeded']);
        expect(t.started).toEqual([2]);
        expect(await receivedIds(db, t.table)).toEqual([fired.id]);
      } finally {
        await t.cleanup();
      }
    }, 30_000);

    it('a worker killed mid-task leaves the row to be reclaimed after its lease, and delivered once', async () => {
      const offset = { ms: 0 };
      const t = await setup({ clockOffsetMs: offset });
      const child = spawnWorker({
        ...t.queue.childArgs,
        schema: db.outboxOptions.schema,
        tablePrefix: t.tablePrefix,
        table: t.table,
        queue: t.queueName,
        leaseSeconds: LEASE_SECONDS,
      });
      try {
        const fired = await t.outbox.fire('jobs.Job', { n: 3 });
        await waitFor(
          () => child.out.pid > 0,
          `the worker process (stderr: ${child.out.stderr})`,
          25_000,
        );
        await t.outbox.deliverPending();
        await waitFor(
          () => child.out.started.includes(3),
          `the worker process to start the task (stderr: ${child.out.stderr})`,
          25_000,
        );
        process.kill(child.out.pid, 'SIGKILL');
        await child.exited;
        // The dead worker took the row: no relay takes it back while its lease holds.
        const [taken] = await t.taskRows();
        expect(taken.status).toBe('claimed');
        expect(taken.claimedBy).toMatch(/:task$/);
        await t.outbox.deliverPending();
        expect(t.handOffs).toHaveLength(1);
        // Past its lease, a relay reclaims it and a worker delivers it, once.
        offset.ms = (LEASE_SECONDS * 1.1 + 1) * 1000;
        await t.startWorker();
        await t.outbox.deliverPending();
        expect(t.handOffs).toHaveLength(2);
        await waitFor(t.settled(1), 'the reclaimed task to be recorded');
        expect(await t.taskRows()).toMatchObject([{ status: 'succeeded', attempts: 1 }]);
        // The killed run wrote its row in the transaction that never committed.
        expect(await receivedIds(db, t.table)).toEqual([fired.id]);
      } finally {
        if (child.out.pid > 0) {
          try {
            process.kill(child.out.pid, 'SIGKILL');
          } catch {}
        }
        await Promise.race([child.exited, new Promise((r) => setTimeout(r, 5_000))]);
        if (child.child.exitCode === null && child.child.signalCode === null)
          child.child.kill('SIGKILL');
        await t.cleanup();
      }
    }, 60_000);

    it("a failing task follows the outbox's retry and dead-letter rules, not the queue's", async () => {
      const t = await setup();
      try {
        await t.outbox.fire('jobs.Job', { n: 4, fail: true });
        await t.startWorker();
        await t.outbox.deliverPending();
        await waitFor(t.settled(1), 'the failed attempt to be recorded');
        const [failed] = await t.taskRows();
        expect(failed).toMatchObject({
          status: 'failed',
          attempts: 1,
          lastError: 'Error: task 4 failed',
        });
        expect(failed.availableAt.getTime()).toBeGreaterThan(Date.now() - 1_000);
        // Not retried by the queue: only the outbox's next claim hands it off again.
        expect(await t.queue.queueRetries()).toBe(0);
        expect(t.handOffs).toHaveLength(1);
        await t.outbox.deliverPending({ ignoreBackoff: true });
        expect(t.handOffs).toHaveLength(2);
        await waitFor(
          async () => (await t.taskRows())[0].status === 'dead',
          'the second attempt to dead-letter the row (maxAttempts 2)',
        );
        expect(await t.taskRows()).toMatchObject([{ status: 'dead', attempts: 2 }]);
        expect(t.outcomes.map((o) => o.status)).toEqual(['failed', 'dead']);
        expect(await t.queue.queueRetries()).toBe(0);
        // Nothing of the failed runs committed.
        expect(await receivedIds(db, t.table)).toEqual([]);
      } finally {
        await t.cleanup();
      }
    }, 30_000);

    it("per-key order holds across hand-offs: a later event of the key waits for the earlier one's verdict", async () => {
      const t = await setup();
      const stop = new AbortController();
      try {
        await t.outbox.fireMany(
          Array.from({ length: 8 }, (_, n) => ({
            name: 'jobs.Job' as const,
            payload: { n },
            orderingKey: n % 2 === 0 ? 'even' : 'odd',
          })),
        );
        await t.startWorker();
        const relay = t.outbox.runRelay({
          signal: stop.signal,
          pollIntervalMs: 20,
          sleep: shortSleep(20),
        });
        await waitFor(t.settled(8), 'every task to be recorded', 20_000);
        stop.abort();
        await relay;
        expect(t.started.filter((n) => n % 2 === 0)).toEqual([0, 2, 4, 6]);
        expect(t.started.filter((n) => n % 2 === 1)).toEqual([1, 3, 5, 7]);
        // One hand-off per row: each waited for the one before it to be recorded.
        expect(t.handOffs).toHaveLength(8);
      } finally {
        stop.abort();
        await t.cleanup();
      }
    }, 30_000);
  });
}

/** Spawn the worker process and follow what it prints. */
function spawnWorker(args: object) {
  const child: ChildProcess = spawn(
    'npx',
    ['tsx', join(here, 'fixtures', 'worker-process.ts'), JSON.stringify(args)],
    { cwd: repoRoot, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const out = { pid: 0, started: [] as number[], stderr: '' };
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) {
      const [word, value] = line.trim().split(' ');
      if (word === 'pid') out.pid = Number(value);
      if (word === 'started') out.started.push(Number(value));
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    out.stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    child.once('exit', () => resolve());
  });
  return { child, out, exited };
}
