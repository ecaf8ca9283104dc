import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  createOutbox,
  defineOutbox,
  event,
  inProcessWakeup,
  receiver,
  silentLogger,
} from '../../src/index.js';
import { postgresTestSchema, type TestDatabase } from '../../testing/databases.js';

/**
 * One receiver that logs each job's start and end; a job whose label starts with `slow`
 * waits for `releaseSlow()` in between.
 */
function slowJobs() {
  const log: string[] = [];
  let releaseSlow!: () => void;
  const slowMayFinish = new Promise<void>((resolve) => {
    releaseSlow = resolve;
  });
  const Job = event({ schema: z.object({ label: z.string() }) });
  const config = defineOutbox({
    events: { 'jobs.Job': Job },
    receivers: {
      'jobs.run': receiver(Job, {
        handle: async (e) => {
          log.push(`start ${e.payload.label}`);
          if (e.payload.label.startsWith('slow')) await slowMayFinish;
          log.push(`end ${e.payload.label}`);
        },
      }),
    },
  });
  return { log, releaseSlow, config };
}

describe.skipIf(!inject('pgAvailable'))('relay: a wakeup during a batch [postgres]', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await postgresTestSchema();
  });
  afterAll(() => db.cleanup());

  it('a wakeup while a batch is delivered starts the next claim at once, instead of queueing behind the batch', async () => {
    const { log, releaseSlow, config } = slowJobs();
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      wakeup: inProcessWakeup(),
      logger: silentLogger,
    });
    await outbox.migrate();
    const stop = new AbortController();
    const relay = outbox.runRelay({ signal: stop.signal, pollIntervalMs: 60_000 });
    try {
      await outbox.fire('jobs.Job', { label: 'slow' });
      await waitFor(() => log.includes('start slow'));
      await outbox.fire('jobs.Job', { label: 'quick' });
      await waitFor(() => log.includes('end quick'));
      expect(log).toEqual(['start slow', 'start quick', 'end quick']);
    } finally {
      releaseSlow();
      stop.abort();
      await relay;
    }
    expect(log).toEqual(['start slow', 'start quick', 'end quick', 'end slow']);
    expect((await outbox.countDeliveries()).succeeded).toBe(2);
    await outbox.close();
  });

  it('a claim that comes back full starts the next claim at once, while its batch is delivered', async () => {
    const { log, releaseSlow, config } = slowJobs();
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      tablePrefix: 'full_',
      wakeup: null,
      logger: silentLogger,
    });
    await outbox.migrate();
    for (const label of ['slow 1', 'slow 2', 'quick 3', 'quick 4'])
      await outbox.fire('jobs.Job', { label });
    const stop = new AbortController();
    // No wakeup and a long poll: only the full first claim can start the second one.
    const relay = outbox.runRelay({ signal: stop.signal, batchSize: 2, pollIntervalMs: 60_000 });
    try {
      await waitFor(() => log.includes('end quick 3') && log.includes('end quick 4'));
      expect(log.filter((l) => l.startsWith('end'))).toEqual(['end quick 3', 'end quick 4']);
    } finally {
      releaseSlow();
      stop.abort();
      await relay;
    }
    expect((await outbox.countDeliveries()).succeeded).toBe(4);
    await outbox.close();
  });
});

async function waitFor(condition: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
