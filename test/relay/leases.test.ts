import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, receiver } from '../../src/index.js';
import { claimBatch } from '../../src/relay/claim.js';
import { newClaimToken } from '../../src/relay/claim-token.js';
import { deliverBatch } from '../../src/relay/deliver-batch.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  capturingStatements,
  deliveryRows as deliveryRowsOf,
  freshPrefix,
  gate,
  openOutbox,
  rowsOf,
  shortSleep,
  T0,
  tableName,
  testClock,
} from './support.js';

const LEASE_MS = 60_000;
const after = (ms: number) => new Date(T0.getTime() + ms);

describeEachDialect('relay: leases and compare-and-set', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Job = event({ schema: z.object({ n: z.number() }) });

  /**
   * A handler that logs (event, worker) into a plain table, and a transport whose outcome
   * the test sets; `worker.current` says who is running, `transport.fail` what it answers.
   */
  async function setup() {
    const log = tableName(db, `handler_log_${Math.random().toString(36).slice(2, 8)}`);
    await db.sequelize.query(`CREATE TABLE ${log} (event_id varchar(64), worker varchar(64))`);
    const worker = { current: '' };
    const transport = { fail: false, sent: [] as string[], failures: [] as string[] };
    const config = defineOutbox({
      events: { 'jobs.Job': Job },
      receivers: {
        'jobs.handler': receiver(Job, {
          handle: async (e, ctx) => {
            await db.sequelize.query(`INSERT INTO ${log} (event_id, worker) VALUES ($1, $2)`, {
              bind: [e.id, worker.current],
              transaction: ctx.transaction,
            });
          },
        }),
        'jobs.transport': receiver(Job, {
          deliver: async () => {
            transport.sent.push(worker.current);
            if (transport.fail) throw new Error(`${worker.current} could not send`);
          },
          onFailure: (f) => void transport.failures.push(f.error),
        }),
      },
      settings: { leaseSeconds: LEASE_MS / 1000 },
    });
    const clock = testClock();
    const tablePrefix = freshPrefix();
    const outbox = await openOutbox(db, config, { clock: clock.now, tablePrefix });
    const logged = async () =>
      (
        (await db.sequelize.query(`SELECT worker FROM ${log} ORDER BY worker`)) as [
          { worker: string }[],
          unknown,
        ]
      )[0].map((r) => r.worker);
    return { outbox, worker, transport, clock, logged, tablePrefix };
  }

  /** Worker A claims everything at T0 and then goes quiet, as a relay that stalled or died. */
  async function claimAsA(outbox: Awaited<ReturnType<typeof setup>>['outbox']) {
    const rt = runtimeOf(outbox);
    const token = newClaimToken('worker-A', rt.clock, rt.state);
    const rows = await rt.store.claim({
      token,
      now: T0,
      leaseUntil: after(LEASE_MS),
      limit: 100,
    });
    return { rt, token, rows };
  }

  it('a claimed row is not claimed by another worker while its lease is live, and is reclaimed once it lapses', async () => {
    const { outbox, worker, logged } = await setup();
    await outbox.fire('jobs.Job', { n: 1 });
    const a = await claimAsA(outbox);
    expect(a.rows).toHaveLength(2);
    expect((await rowsOf(outbox, 'jobs.handler'))[0]).toMatchObject({
      status: 'claimed',
      claimedBy: 'worker-A',
      leaseUntil: after(LEASE_MS),
    });

    worker.current = 'B';
    const live = await outbox.runRelay({
      workerId: 'worker-B',
      passes: 1,
      now: () => after(LEASE_MS - 1),
      sleep: shortSleep(),
    });
    expect(live.succeeded).toBe(0);

    const lapsed = await outbox.runRelay({
      workerId: 'worker-B',
      passes: 1,
      now: () => after(LEASE_MS),
      sleep: shortSleep(),
    });
    expect(lapsed.succeeded).toBe(2);
    for (const key of ['jobs.handler', 'jobs.transport'])
      expect((await rowsOf(outbox, key))[0]).toMatchObject({
        status: 'succeeded',
        attempts: 1,
        claimedBy: 'worker-B',
      });
    expect(await logged()).toEqual(['B']);
  });

  it("a stale worker never overwrites another's verdict: its late success changes nothing and its handler's writes roll back", async () => {
    const { outbox, worker, transport, logged } = await setup();
    await outbox.fire('jobs.Job', { n: 1 });
    const a = await claimAsA(outbox);

    // B takes the lapsed rows; its transport fails, its handler succeeds.
    worker.current = 'B';
    transport.fail = true;
    await outbox.runRelay({
      workerId: 'worker-B',
      passes: 1,
      now: () => after(LEASE_MS + 1),
      sleep: shortSleep(),
    });
    const verdicts = async () =>
      (await runtimeOf(outbox).store.readDeliveries({})).map((r) => ({
        key: r.receiverKey,
        status: r.status,
        attempts: r.attempts,
        lastError: r.lastError,
        claimedBy: r.claimedBy,
      }));
    const afterB = await verdicts();
    expect(afterB).toEqual([
      {
        key: 'jobs.handler',
        status: 'succeeded',
        attempts: 1,
        lastError: null,
        claimedBy: 'worker-B',
      },
      {
        key: 'jobs.transport',
        status: 'failed',
        attempts: 1,
        lastError: 'Error: B could not send',
        claimedBy: 'worker-B',
      },
    ]);

    // A wakes up and delivers what it claimed: the transport now succeeds for it.
    worker.current = 'A';
    transport.fail = false;
    const delivered: string[] = [];
    outbox.on('relay:delivered', (e) => void delivered.push(e.receiverKey));
    const report = await deliverBatch(a.rt, a.rows, a.token, {
      concurrency: 1,
      leaseSeconds: LEASE_MS / 1000,
    });
    // Both of A's verdicts were refused, and neither is reported as a delivery.
    expect(report.lost).toBe(2);
    expect(report.counts).toEqual({});
    expect(delivered).toEqual([]);
    expect(await verdicts()).toEqual(afterB);
    // A's handler ran, but its write rolled back with the acknowledgement it could not make.
    expect(await logged()).toEqual(['B']);
    expect(transport.sent).toEqual(['B', 'A']);
  });

  it("a stale worker's failure never overwrites another's success", async () => {
    const { outbox, worker, transport } = await setup();
    await outbox.fire('jobs.Job', { n: 1 });
    const a = await claimAsA(outbox);
    worker.current = 'B';
    await outbox.runRelay({
      workerId: 'worker-B',
      passes: 1,
      now: () => after(LEASE_MS + 1),
      sleep: shortSleep(),
    });
    worker.current = 'A';
    transport.fail = true;
    const failed: string[] = [];
    outbox.on('relay:failed', (e) => void failed.push(e.receiverKey));
    const report = await deliverBatch(a.rt, a.rows, a.token, {
      concurrency: 1,
      leaseSeconds: 60,
    });
    // The refused failure reaches no observer and no onFailure hook: it never happened.
    expect(report.counts).toEqual({});
    expect(failed).toEqual([]);
    expect(transport.failures).toEqual([]);
    expect((await rowsOf(outbox, 'jobs.transport'))[0]).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      lastError: null,
      claimedBy: 'worker-B',
    });
    // Nor can the stale worker renew or hand back a lease it no longer holds.
    expect(await a.rt.store.renewLeases([a.rows[0].id], a.token, after(999_999))).toBe(0);
    expect(await a.rt.store.release([a.rows[0].id], a.token, T0)).toBe(0);
  });

  it.each([
    {
      kind: 'handler',
      name: "a row is extended to its own receiver's longer lease before it starts, though the claim stamps the outbox's",
    },
    {
      kind: 'deliver',
      name: "a transport's row is extended to its receiver's longer lease before its deliver starts, as a handler's is",
    },
  ] as const)('$name', async ({ kind }) => {
    const leases: (Date | null)[] = [];
    // The row's lease as the receiver sees it when it starts.
    const seeLease = async (deliveryId: string | null) => {
      const rows = await runtimeOf(outbox).store.readDeliveries({});
      leases.push(rows.find((r) => r.id === deliveryId)!.leaseUntil);
    };
    const config = defineOutbox({
      events: { 'jobs.Job': Job },
      receivers: {
        'jobs.report':
          kind === 'handler'
            ? receiver(Job, { leaseSeconds: 600, handle: (_e, ctx) => seeLease(ctx.deliveryId) })
            : receiver(Job, { leaseSeconds: 600, deliver: (_e, ctx) => seeLease(ctx.deliveryId) }),
      },
      settings: { leaseSeconds: 60 },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('jobs.Job', { n: 1 });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(leases).toEqual([after(600_000)]);
    expect((await rowsOf(outbox, 'jobs.report'))[0]).toMatchObject({
      status: 'succeeded',
      leaseUntil: null,
    });
  });

  it("one receiver's long lease does not delay the others' recovery: the claim stamps the outbox's lease plus 10 percent", async () => {
    const config = defineOutbox({
      events: { 'jobs.Job': Job },
      receivers: {
        'jobs.slowReport': receiver(Job, { leaseSeconds: 600, handle: () => {} }),
        'jobs.quick': receiver(Job, { handle: () => {} }),
      },
      settings: { leaseSeconds: 60 },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('jobs.Job', { n: 1 });
    const claim = await claimBatch(runtimeOf(outbox), { workerId: 'w', now: T0, limit: 10 });
    expect(claim.leaseSeconds).toBe(66);
    expect((await rowsOf(outbox, 'jobs.quick'))[0].leaseUntil).toEqual(after(66_000));
    expect((await rowsOf(outbox, 'jobs.slowReport'))[0].leaseUntil).toEqual(after(66_000));
  });

  it('where every durable receiver shares one lease no longer than the setting, the claim stamps that lease plus 10 percent', async () => {
    const config = defineOutbox({
      events: { 'jobs.Job': Job },
      receivers: {
        'jobs.a': receiver(Job, { leaseSeconds: 20, handle: () => {} }),
        'jobs.b': receiver(Job, { leaseSeconds: 20, deliver: async () => {} }),
        'jobs.inline': receiver(Job, { mode: 'inline', leaseSeconds: 5, handle: () => {} }),
      },
      settings: { leaseSeconds: 60 },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('jobs.Job', { n: 1 });
    const claim = await claimBatch(runtimeOf(outbox), { workerId: 'w', now: T0, limit: 10 });
    expect(claim.leaseSeconds).toBe(22);
    expect((await deliveryRowsOf(outbox)).map((r) => r.leaseUntil)).toEqual([
      after(22_000),
      after(22_000),
    ]);
  });

  it("a row that starts while the claim still covers its receiver's lease starts without another write", async () => {
    const config = defineOutbox({
      events: { 'jobs.Job': Job },
      receivers: { 'jobs.quick': receiver(Job, { deliver: async () => {} }) },
      settings: { leaseSeconds: 60 },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('jobs.Job', { n: 1 });
    const statements = await capturingStatements(db.sequelize, () =>
      outbox.runRelay({ passes: 1, sleep: shortSleep() }),
    );
    // The claim and the record: no lease extension in between.
    expect(statements.filter((s) => /UPDATE\s+\S*deliveries/i.test(s))).toHaveLength(2);
  });

  if (dialect.name === 'postgres') {
    it("a worker whose lease lapsed while its handler ran loses the row, and the handler's writes roll back", async () => {
      const { outbox, worker, logged, tablePrefix } = await setup();
      await outbox.fire('jobs.Job', { n: 1 });
      const held = gate();
      const started = gate();
      // A real relay A whose handler is held mid-delivery…
      const stalled = defineOutbox({
        events: { 'jobs.Job': Job },
        receivers: {
          'jobs.handler': receiver(Job, {
            handle: async (e, ctx) => {
              started.open();
              await held.promise;
              await db.sequelize.query(
                `INSERT INTO ${tableName(db, 'stalled_log')} (event_id, worker) VALUES ($1, 'A')`,
                { bind: [e.id], transaction: ctx.transaction },
              );
            },
          }),
          'jobs.transport': receiver(Job, { deliver: async () => {} }),
        },
      });
      await db.sequelize.query(
        `CREATE TABLE ${tableName(db, 'stalled_log')} (event_id varchar(64), worker varchar(64))`,
      );
      const relayA = await openOutbox(db, stalled, { tablePrefix, clock: () => T0 });
      const stop = new AbortController();
      const running = relayA.runRelay({
        workerId: 'worker-A',
        signal: stop.signal,
        concurrency: 1,
      });
      try {
        await started.promise;
        // …while B finds the lease lapsed and delivers the row itself.
        worker.current = 'B';
        const b = await outbox.runRelay({
          workerId: 'worker-B',
          passes: 1,
          now: () => after(LEASE_MS * 1.1 + 1), // past the claim's lease, its 10 percent of headroom included
          sleep: shortSleep(),
        });
        expect(b.succeeded).toBeGreaterThanOrEqual(1);
      } finally {
        stop.abort();
        held.open();
      }
      await running;
      expect((await rowsOf(outbox, 'jobs.handler'))[0]).toMatchObject({
        status: 'succeeded',
        attempts: 1,
        claimedBy: 'worker-B',
      });
      expect(await logged()).toEqual(['B']);
      const [stalledRows] = (await db.sequelize.query(
        `SELECT * FROM ${tableName(db, 'stalled_log')}`,
      )) as [unknown[], unknown];
      expect(stalledRows).toEqual([]);
    });
  }
});
