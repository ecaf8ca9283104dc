import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  buildCatalogue,
  createOutbox,
  defineOutbox,
  event,
  NotYet,
  PermanentFailure,
  receiver,
  silentLogger,
  type TaskBackend,
  type TaskHandOff,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox, inlineTaskBackend, sqliteTestDatabase } from '../../testing/index.js';
import { describeEachDialect } from '../support/dialects.js';
import { openOutbox, rowsOf, T0, testClock } from './support.js';

const Job = event({ schema: z.object({ n: z.number(), fail: z.string().optional() }) });
const LEASE_SECONDS = 120;

/** A backend that only keeps what it was handed: the test plays the queue's worker. */
function heldQueue(options: { refuse?: boolean } = {}) {
  const jobs: TaskHandOff[] = [];
  const backend: TaskBackend = {
    name: 'held',
    async enqueue(handOff) {
      if (options.refuse) throw new Error('the queue is down');
      jobs.push(JSON.parse(JSON.stringify(handOff)));
    },
    async close() {},
  };
  return { backend, jobs };
}

/** The config of one task receiver (and one relay receiver beside it). */
function taskConfig(ran: number[]) {
  return defineOutbox({
    events: { 'jobs.Job': Job },
    receivers: {
      'jobs.mail': receiver(Job, {
        site: 'task',
        leaseSeconds: LEASE_SECONDS,
        maxAttempts: 2,
        handle: (e) => {
          if (e.payload.fail === 'permanent') throw new PermanentFailure('no such mailbox');
          if (e.payload.fail === 'notYet') throw new NotYet(new Date(T0.getTime() + 3_600_000));
          if (e.payload.fail) throw new Error(e.payload.fail);
          ran.push(e.payload.n);
        },
      }),
      'jobs.audit': receiver(Job, { handle: () => {} }),
    },
  });
}

const claimOf = (job: TaskHandOff) => ({ claimedBy: job.claimedBy, claimedAt: job.claimedAt });

describe("site: 'task' is declared on a durable receiver, with a task backend", () => {
  it('is refused beside inline, onCommit and eager, and when not "relay" or "task", naming the receiver', () => {
    const declare = (options: Record<string, unknown>) =>
      defineOutbox({
        events: { 'jobs.Job': Job },
        receivers: { 'jobs.mail': receiver(Job, { handle: () => {}, ...options }) },
      });
    expect(() => declare({ site: 'task', mode: 'inline' })).toThrowErrorMatchingInlineSnapshot(`
      [ConfigurationError: Invalid outbox config:
        receivers["jobs.mail"].site needs a durable receiver (mode is "inline"): a task backend is handed a claimed delivery row, and inline/onCommit receivers have none (got {"mode":"inline","site":"task"})]
    `);
    expect(() => declare({ site: 'task', mode: 'onCommit' })).toThrow(
      /receivers\["jobs.mail"\].site needs a durable receiver \(mode is "onCommit"\)/,
    );
    expect(() => declare({ site: 'task', eager: true })).toThrowErrorMatchingInlineSnapshot(`
      [ConfigurationError: Invalid outbox config:
        receivers["jobs.mail"].site cannot be "task" beside eager: true, which means "attempt it in the firing process"; a task runs in the task backend's worker; drop one of them (got {"eager":true,"site":"task"})]
    `);
    expect(() => declare({ site: 'queue' })).toThrow(
      /receivers\["jobs.mail"\].site must be "relay" or "task" \(got "queue"\)/,
    );
    expect(declare({ site: 'relay', mode: 'inline' }).receivers[0].site).toBe('relay');
    expect(declare({}).receivers[0].site).toBe('relay');
  });

  it('createOutbox refuses a task receiver when no task backend is configured, naming it', async () => {
    await using db = await sqliteTestDatabase();
    expect(() =>
      createOutbox(taskConfig([]), { ...db.outboxOptions, logger: silentLogger }),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: receivers["jobs.mail"] declares site: 'task', but createOutbox(config, { taskBackend }) was given none: pass one (pgBossTaskBackend(boss, { queue }), bullmqTaskBackend({ queue, connection }), or inlineTaskBackend from outboxkit/testing), or declare the receiver site: 'relay']`,
    );
    expect(() =>
      createOutbox(taskConfig([]), {
        ...db.outboxOptions,
        taskBackend: { name: 'x' } as unknown as TaskBackend,
      }),
    ).toThrow(/must be a TaskBackend/);
  });

  it("the catalogue publishes each receiver's site", () => {
    const [job] = buildCatalogue(taskConfig([])).events;
    expect(job.receivers.map((r) => [r.key, r.site])).toEqual([
      ['jobs.audit', 'relay'],
      ['jobs.mail', 'task'],
    ]);
  });
});

describeEachDialect("site: 'task': the relay hands the claimed row off", (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  async function open(options: { refuse?: boolean } = {}) {
    const ran: number[] = [];
    const queue = heldQueue(options);
    const clock = testClock();
    const outbox = await openOutbox(db, taskConfig(ran), {
      taskBackend: queue.backend,
      clock: clock.now,
    });
    const mailRows = () => rowsOf(outbox, 'jobs.mail');
    return { outbox, ran, queue, clock, mailRows };
  }

  it('claims as always, extends the lease to the receiver leaseSeconds, enqueues the claim, and records nothing', async () => {
    const { outbox, ran, queue, mailRows } = await open();
    await outbox.fire('jobs.Job', { n: 1 });
    const counts = await outbox.deliverPending();
    // Only the relay receiver's row is counted: the task row is its task's to record.
    expect(counts.succeeded).toBe(1);
    expect(ran).toEqual([]);
    expect(queue.jobs).toHaveLength(1);
    const [row] = await mailRows();
    expect(row).toMatchObject({
      status: 'claimed',
      attempts: 0,
      claimedBy: queue.jobs[0].claimedBy,
    });
    expect(queue.jobs[0]).toEqual({
      deliveryId: row.id,
      claimedBy: expect.stringMatching(/:pending$/),
      claimedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    });
    expect(row.leaseUntil?.getTime()).toBe(T0.getTime() + LEASE_SECONDS * 1000);
    // Handed off: a second pass claims nothing (the lease holds).
    expect((await outbox.deliverPending()).succeeded).toBe(0);
    expect(queue.jobs).toHaveLength(1);
  });

  it("the queue's worker takes the row under exactly that claim and records it once; a duplicate job does nothing", async () => {
    const { outbox, ran, queue, mailRows } = await open();
    await outbox.fire('jobs.Job', { n: 2 });
    await outbox.deliverPending();
    const [job] = queue.jobs;
    expect(await outbox.deliverOne(job.deliveryId, claimOf(job))).toBe('succeeded');
    expect(ran).toEqual([2]);
    expect(await mailRows()).toMatchObject([{ status: 'succeeded', attempts: 1 }]);
    // The same message again (a redelivery, a second copy), and a job for the settled row.
    expect(await outbox.deliverOne(job.deliveryId, claimOf(job))).toBeNull();
    expect(ran).toEqual([2]);
    expect(await mailRows()).toMatchObject([{ status: 'succeeded', attempts: 1 }]);
  });

  it('a job held past its lease does nothing; the row is reclaimed, handed off again, and delivered once', async () => {
    const { outbox, ran, queue, clock, mailRows } = await open();
    await outbox.fire('jobs.Job', { n: 3 });
    await outbox.deliverPending();
    const [stale] = queue.jobs;
    clock.advance(LEASE_SECONDS * 1000 + 1);
    expect(await outbox.deliverOne(stale.deliveryId, claimOf(stale))).toBeNull();
    expect(ran).toEqual([]);
    expect((await mailRows())[0].status).toBe('claimed');
    // The lapsed lease: a relay reclaims the row and hands it off under a new claim.
    await outbox.deliverPending();
    expect(queue.jobs).toHaveLength(2);
    const [, fresh] = queue.jobs;
    expect(fresh.claimedAt).not.toBe(stale.claimedAt);
    expect(await outbox.deliverOne(stale.deliveryId, claimOf(stale))).toBeNull();
    expect(await outbox.deliverOne(fresh.deliveryId, claimOf(fresh))).toBe('succeeded');
    expect(ran).toEqual([3]);
    expect(await mailRows()).toMatchObject([{ status: 'succeeded', attempts: 1 }]);
  });

  it('a worker that dies after the take leaves the row to be reclaimed after its lease, and delivered once', async () => {
    const { outbox, ran, queue, clock, mailRows } = await open();
    await outbox.fire('jobs.Job', { n: 4 });
    await outbox.deliverPending();
    const [job] = queue.jobs;
    // The take alone, as a worker that died right after it would have left the row.
    const { runtimeOf } = await import('../../src/runtime.js');
    const rt = runtimeOf(outbox);
    const taken = await rt.store.takeClaim(
      job.deliveryId,
      { workerId: job.claimedBy, claimedAt: new Date(job.claimedAt) },
      { workerId: 'dead-worker', claimedAt: clock.now() },
      new Date(clock.now().getTime() + LEASE_SECONDS * 1000),
      clock.now(),
    );
    expect(taken?.id).toBe(job.deliveryId);
    expect((await mailRows())[0]).toMatchObject({ status: 'claimed', claimedBy: 'dead-worker' });
    // The queue redelivers the message: the row is the dead worker's, so it does nothing.
    expect(await outbox.deliverOne(job.deliveryId, claimOf(job))).toBeNull();
    await outbox.deliverPending();
    expect(queue.jobs).toHaveLength(1);
    clock.advance(LEASE_SECONDS * 1000 + 1);
    await outbox.deliverPending();
    expect(queue.jobs).toHaveLength(2);
    expect(await outbox.deliverOne(queue.jobs[1].deliveryId, claimOf(queue.jobs[1]))).toBe(
      'succeeded',
    );
    expect(ran).toEqual([4]);
    expect(await mailRows()).toMatchObject([{ status: 'succeeded', attempts: 1 }]);
  });

  it("a failing task follows the outbox's retry and dead-letter rules: backoff, then dead at maxAttempts", async () => {
    const { outbox, queue, clock, mailRows } = await open();
    await outbox.fire('jobs.Job', { n: 5, fail: 'smtp down' });
    await outbox.deliverPending();
    expect(await outbox.deliverOne(queue.jobs[0].deliveryId, claimOf(queue.jobs[0]))).toBe(
      'failed',
    );
    const [failed] = await mailRows();
    expect(failed).toMatchObject({ status: 'failed', attempts: 1, lastError: 'Error: smtp down' });
    // Full jitter at 0.5 of the first ceiling (1 s): owed again in half a second, not before.
    expect(failed.availableAt.getTime()).toBe(T0.getTime() + 500);
    await outbox.deliverPending();
    expect(queue.jobs).toHaveLength(1);
    clock.advance(500);
    await outbox.deliverPending();
    expect(queue.jobs).toHaveLength(2);
    expect(await outbox.deliverOne(queue.jobs[1].deliveryId, claimOf(queue.jobs[1]))).toBe('dead');
    expect(await mailRows()).toMatchObject([{ status: 'dead', attempts: 2 }]);
  });

  it('PermanentFailure dead-letters at once, and NotYet moves the row to its time with no attempt spent', async () => {
    const { outbox, queue, mailRows } = await open();
    await outbox.fire('jobs.Job', { n: 6, fail: 'permanent' });
    await outbox.fire('jobs.Job', { n: 7, fail: 'notYet' });
    await outbox.deliverPending();
    expect(queue.jobs).toHaveLength(2);
    const statuses = [];
    for (const job of queue.jobs)
      statuses.push(await outbox.deliverOne(job.deliveryId, claimOf(job)));
    expect(statuses).toEqual(['dead', 'pending']);
    const [dead, later] = await mailRows();
    expect(dead).toMatchObject({ status: 'dead', attempts: 1 });
    expect(later).toMatchObject({ status: 'pending', attempts: 0 });
    expect(later.dueAt?.getTime()).toBe(T0.getTime() + 3_600_000);
  });

  it('a lost enqueue is reclaimed when the lease lapses and handed off again', async () => {
    const { outbox, queue, clock, mailRows } = await open({ refuse: true });
    await outbox.fire('jobs.Job', { n: 8 });
    await outbox.deliverPending();
    expect(queue.jobs).toHaveLength(0);
    expect((await mailRows())[0]).toMatchObject({ status: 'claimed', attempts: 0 });
    await outbox.deliverPending();
    expect((await mailRows())[0].leaseUntil?.getTime()).toBe(T0.getTime() + LEASE_SECONDS * 1000);
    clock.advance(LEASE_SECONDS * 1000 + 1);
    const claims: string[] = [];
    outbox.on('relay:error', (e) => void claims.push(e.during));
    await outbox.deliverPending();
    expect(claims).toEqual(['handOff']);
    expect((await mailRows())[0].leaseUntil?.getTime()).toBe(
      clock.now().getTime() + LEASE_SECONDS * 1000,
    );
  });

  it("per-key order holds across hand-offs: a later event of the key waits for the earlier one's verdict", async () => {
    const { outbox, ran, queue, clock } = await open();
    await outbox.fire('jobs.Job', { n: 10, fail: 'flaky' }, { orderingKey: 'k' });
    await outbox.fire('jobs.Job', { n: 11 }, { orderingKey: 'k' });
    await outbox.fire('jobs.Job', { n: 12 }, { orderingKey: 'other' });
    await outbox.deliverPending();
    expect(queue.jobs).toHaveLength(2); // n 10 and n 12; n 11 waits behind n 10
    for (const job of queue.jobs) await outbox.deliverOne(job.deliveryId, claimOf(job));
    expect(ran).toEqual([12]);
    await outbox.deliverPending();
    expect(queue.jobs).toHaveLength(2); // n 10 failed: it holds n 11 back through its backoff
    clock.advance(1_000);
    await outbox.deliverPending();
    expect(queue.jobs).toHaveLength(3); // n 10's retry, still alone for its key
    expect(await outbox.deliverOne(queue.jobs[2].deliveryId, claimOf(queue.jobs[2]))).toBe('dead');
    // A dead letter holds its key back too, as on the relay.
    await outbox.deliverPending();
    expect(queue.jobs).toHaveLength(3);
    expect(ran).toEqual([12]);
  });

  it("the task's attempt is the relay's: aroundDelivery, observer events and attribution", async () => {
    const Follow = event({ schema: z.object({ of: z.number() }) });
    const hooked: string[] = [];
    const config = defineOutbox({
      events: { 'jobs.Job': Job, 'jobs.Follow': Follow },
      receivers: {
        'jobs.mail': receiver(Job, {
          site: 'task',
          handle: async (e, ctx) => {
            await outbox.fire('jobs.Follow', { of: e.payload.n }, { transaction: ctx.transaction });
          },
        }),
      },
    });
    const queue = heldQueue();
    const outbox = await openOutbox(db, config, {
      taskBackend: queue.backend,
      aroundDelivery: async (attempt, next) => {
        hooked.push(`${attempt.receiverKey}:start`);
        const outcomes = await next();
        hooked.push(`${attempt.receiverKey}:${outcomes[0].status}`);
      },
    });
    const told: string[] = [];
    outbox.on('relay:handedOff', (e) => void told.push(`handedOff:${e.taskBackend}`));
    outbox.on('relay:delivered', (e) => void told.push(`delivered:${e.receiverKey}`));
    const parent = await outbox.fire('jobs.Job', { n: 1 });
    await outbox.deliverPending();
    expect(hooked).toEqual([]); // handing off is no attempt
    const [job] = queue.jobs;
    const status = await outbox.deliverOne(job.deliveryId, claimOf(job));
    expect([status, (await rowsOf(outbox, 'jobs.mail'))[0].lastError]).toEqual(['succeeded', null]);
    expect(hooked).toEqual(['jobs.mail:start', 'jobs.mail:succeeded']);
    expect(told).toEqual(['handedOff:held', 'delivered:jobs.mail']);
    const { runtimeOf } = await import('../../src/runtime.js');
    const [follow] = await runtimeOf(outbox).store.readEvents({ name: 'jobs.Follow' });
    expect(follow.causedBy).toBe(parent.sequence);
  });

  it('health counts the rows a task queue holds as claimed', async () => {
    const { outbox } = await open();
    await outbox.fire('jobs.Job', { n: 13 });
    await outbox.deliverPending();
    const health = await outbox.health();
    expect(health).toMatchObject({ owed: 1, claimed: 1, lapsedLeases: 0 });
    expect(health.receivers).toMatchObject([{ receiverKey: 'jobs.mail', owed: 1, claimed: 1 }]);
  });

  it('refuses a claim given in half, or a claim time that is not ISO 8601', async () => {
    const { outbox } = await open();
    await expect(outbox.deliverOne('1', { claimedBy: 'w' })).rejects.toThrow(/needs both/);
    await expect(
      outbox.deliverOne('1', { claimedBy: 'w', claimedAt: 'yesterday' }),
    ).rejects.toThrow(/must be the ISO 8601 time/);
  });
});

describeEachDialect("site: 'task' under drainOutbox, with the inline test backend", (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('runs the task rows through the backend, counted in no status, each handed off at most once a call', async () => {
    const ran: number[] = [];
    const outbox = await openOutbox(db, taskConfig(ran), { taskBackend: inlineTaskBackend });
    await outbox.fire('jobs.Job', { n: 1 });
    await outbox.fire('jobs.Job', { n: 2 }, { orderingKey: 'k' });
    await outbox.fire('jobs.Job', { n: 3 }, { orderingKey: 'k' });
    const counts = await drainOutbox(outbox);
    expect(counts.succeeded).toBe(3); // the audit rows only
    // Every task ran once; 2 before 3 (one ordering key), the keyless 1 anywhere.
    expect([...ran].sort()).toEqual([1, 2, 3]);
    expect(ran.filter((n) => n !== 1)).toEqual([2, 3]);
    expect((await rowsOf(outbox, 'jobs.mail')).map((r) => r.status)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
  });

  it('a failing task is retried by the drain until its budget is spent, as the outbox rules', async () => {
    const ran: number[] = [];
    const outbox = await openOutbox(db, taskConfig(ran), { taskBackend: inlineTaskBackend });
    await outbox.fire('jobs.Job', { n: 1, fail: 'always' });
    await drainOutbox(outbox);
    expect(await rowsOf(outbox, 'jobs.mail')).toMatchObject([{ status: 'dead', attempts: 2 }]);
  });

  it('with a now beyond the real clock, a handed-off row is not claimed back in the same call', async () => {
    const handed: string[] = [];
    const outbox = await openOutbox(db, taskConfig([]), {
      taskBackend: {
        name: 'held',
        enqueue: async (h) => void handed.push(h.deliveryId),
        close: async () => {},
      },
    });
    await outbox.fire('jobs.Job', { n: 1 });
    await drainOutbox(outbox, { now: new Date(Date.now() + 10 * LEASE_SECONDS * 1000) });
    expect(handed).toHaveLength(1);
  });
});
