import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  defineOutbox,
  event,
  inProcessWakeup,
  receiver,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { describeEachDialect } from '../support/dialects.js';
import { gate, openOutbox, rowsOf, shortSleep, T0, testClock } from './support.js';

describeEachDialect('relay: stopping', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Task = event({ schema: z.object({ n: z.number() }) });

  it("a stop fires the attempt's signal, and a receiver that gives up on it is handed back with no attempt spent", async () => {
    const started = gate();
    const reasons: unknown[] = [];
    const config = defineOutbox({
      events: { 'ops.Task': Task },
      receivers: {
        'ops.send': receiver(Task, {
          maxAttempts: 1,
          deliver: (_e, ctx) =>
            new Promise<void>((_, reject) => {
              started.open();
              ctx.signal!.addEventListener('abort', () => {
                reasons.push(ctx.signal!.reason);
                reject(ctx.signal!.reason); // what a client given the signal rejects with
              });
            }),
        }),
      },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await outbox.fire('ops.Task', { n: 1 });
    const stop = new AbortController();
    const relay = outbox.runRelay({ signal: stop.signal, sleep: shortSleep() });
    await started.promise;
    stop.abort('shutting down');
    const report = await relay;
    expect(reasons).toEqual(['shutting down']);
    expect(report).toMatchObject({ failed: 0, dead: 0, handedBack: 1 });
    // With one attempt only, a charged stop would have dead-lettered it.
    expect((await rowsOf(outbox, 'ops.send'))[0]).toMatchObject({
      status: 'pending',
      attempts: 0,
      lastError: null,
    });
  });

  it('stop finishes the delivery in hand and hands the rest of the batch back at once', async () => {
    const held = gate();
    const started = gate();
    const done: number[] = [];
    const config = defineOutbox({
      events: { 'ops.Task': Task },
      receivers: {
        'ops.work': receiver(Task, {
          handle: async (e) => {
            if (e.payload.n === 1) {
              started.open();
              await held.promise;
            }
            done.push(e.payload.n);
          },
        }),
      },
    });
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    for (let n = 1; n <= 5; n++) await outbox.fire('ops.Task', { n });

    const stop = new AbortController();
    const relay = outbox.runRelay({ signal: stop.signal, concurrency: 1, sleep: shortSleep() });
    await started.promise;
    stop.abort();
    held.open();
    const report = await relay;

    expect(done).toEqual([1]);
    expect(report).toMatchObject({ succeeded: 1, handedBack: 4 });
    const rows = await rowsOf(outbox, 'ops.work');
    expect(rows[0]).toMatchObject({ status: 'succeeded', attempts: 1 });
    // The rest are handed back: no attempt spent, lease already lapsed (claimable now).
    for (const row of rows.slice(1)) {
      expect(row.attempts).toBe(0);
      expect(row.status === 'pending' || row.leaseUntil!.getTime() <= T0.getTime()).toBe(true);
    }
    // Any worker takes them at once, on the same clock, without waiting out a lease.
    const drained = await drainOutbox(outbox, { respectBackoff: true });
    expect(drained.succeeded).toBe(4);
    expect(done).toEqual([1, 2, 3, 4, 5]);
  });

  it("a transport's outcome is recorded even when the relay is stopped meanwhile", async () => {
    const held = gate();
    const started = gate();
    const config = defineOutbox({
      events: { 'ops.Task': Task },
      receivers: {
        'ops.send': receiver(Task, {
          deliver: async (e) => {
            started.open();
            await held.promise;
            if ((e.payload as { n: number }).n === 1) throw new Error('refused while stopping');
          },
        }),
      },
      settings: { backoff: { baseSeconds: 2, capSeconds: 2 } },
    });
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    for (let n = 1; n <= 3; n++) await outbox.fire('ops.Task', { n });
    const stop = new AbortController();
    const relay = outbox.runRelay({ signal: stop.signal, concurrency: 1, sleep: shortSleep() });
    await started.promise;
    stop.abort();
    held.open();
    expect(await relay).toMatchObject({ failed: 1, handedBack: 2 });
    const [first, ...rest] = await rowsOf(outbox, 'ops.send');
    expect(rest.map((r) => r.attempts)).toEqual([0, 0]);
    expect(first).toMatchObject({
      status: 'failed',
      attempts: 1,
      lastError: 'Error: refused while stopping',
      availableAt: new Date(T0.getTime() + 1_000),
    });
  });

  it('an idle relay stops as soon as it is asked, without waiting out its poll interval', async () => {
    const config = defineOutbox({
      events: { 'ops.Task': Task },
      receivers: { 'ops.work': receiver(Task, { handle: () => {} }) },
    });
    const outbox = await openOutbox(db, config);
    const stop = new AbortController();
    const startedAt = Date.now();
    // The real (abortable) sleep, with a poll interval of a minute.
    const relay = outbox.runRelay({ signal: stop.signal, pollIntervalMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 30));
    stop.abort();
    const report = await relay;
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    expect(report.passes).toBe(1);
  });

  it('an idle relay on the real scheduler is woken by each signal, not by its poll interval', async () => {
    const seen: number[] = [];
    let delivered: () => void = () => {};
    const config = defineOutbox({
      events: { 'ops.Task': Task },
      receivers: {
        'ops.work': receiver(Task, {
          handle: (e) => {
            seen.push(e.payload.n);
            delivered();
          },
        }),
      },
    });
    const outbox = await openOutbox(db, config, { wakeup: inProcessWakeup() });
    const stop = new AbortController();
    const startedAt = Date.now();
    // The real sleep, with a poll interval of a minute: only the wakeups end its waits.
    const relay = outbox.runRelay({ signal: stop.signal, pollIntervalMs: 60_000 });
    try {
      for (let n = 1; n <= 3; n++) {
        await new Promise((resolve) => setTimeout(resolve, 30)); // idle again
        const done = new Promise<void>((resolve) => {
          delivered = resolve;
        });
        await outbox.fire('ops.Task', { n });
        await done;
      }
    } finally {
      stop.abort();
    }
    await relay;
    expect(seen).toEqual([1, 2, 3]);
    expect(Date.now() - startedAt).toBeLessThan(10_000);
    expect((await rowsOf(outbox, 'ops.work')).map((r) => r.status)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
  });

  it('a relay given an already aborted signal claims nothing', async () => {
    const seen: number[] = [];
    const config = defineOutbox({
      events: { 'ops.Task': Task },
      receivers: { 'ops.work': receiver(Task, { handle: (e) => void seen.push(e.payload.n) }) },
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('ops.Task', { n: 1 });
    const report = await outbox.runRelay({ signal: AbortSignal.abort() });
    expect(report.passes).toBe(0);
    expect(seen).toEqual([]);
    expect((await rowsOf(outbox, 'ops.work'))[0].status).toBe('pending');
  });

  it('runRelay refuses a batch size, concurrency or passes it cannot honour', async () => {
    const config = defineOutbox({
      events: { 'ops.Task': Task },
      receivers: { 'ops.work': receiver(Task, { handle: () => {} }) },
    });
    const outbox = await openOutbox(db, config);
    await expect(outbox.runRelay({ batchSize: 0 })).rejects.toThrow(ConfigurationError);
    await expect(outbox.runRelay({ batchSize: 10_001 })).rejects.toThrow(
      'runRelay({ batchSize }) must be an integer from 1 to 10000 (got 10001)',
    );
    await expect(outbox.runRelay({ concurrency: 0 })).rejects.toThrow(
      'runRelay({ concurrency }) must be an integer ≥ 1 (got 0)',
    );
    await expect(outbox.runRelay({ passes: 1.5 })).rejects.toThrow(
      'runRelay({ passes }) must be an integer ≥ 1 (got 1.5)',
    );
  });
});
