import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigurationError, defineOutbox, event, receiver } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import { freshPrefix, openOutbox, rowsOf, shortSleep, waitFor } from './support.js';

/** The lease every claim stamps here, and how long each delivery takes: longer, in sum. */
const LEASE_SECONDS = 0.45;
const DELIVERY_MS = 350;
const EVENTS = 3;

describeEachDialect('relay: lease renewal', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Upload = event({ schema: z.object({ n: z.number() }) });

  /** A config whose transport takes DELIVERY_MS per event and logs who sent what. */
  function slowConfig(sent: string[], who: string) {
    return defineOutbox({
      events: { 'files.Upload': Upload },
      receivers: {
        'files.store': receiver(Upload, {
          deliver: async (e) => {
            sent.push(`${who}:${(e.payload as { n: number }).n}`);
            await new Promise((resolve) => setTimeout(resolve, DELIVERY_MS));
          },
        }),
      },
      settings: { leaseSeconds: LEASE_SECONDS },
    });
  }

  it('a batch that takes longer than its lease keeps its lease and is not claimed by another relay', async () => {
    const sent: string[] = [];
    const tablePrefix = freshPrefix();
    const first = await openOutbox(db, slowConfig(sent, 'first'), { tablePrefix });
    const second = await openOutbox(db, slowConfig(sent, 'second'), {
      tablePrefix,
      sequelize: db.connectAgain(),
    });
    for (let n = 1; n <= EVENTS; n++) await first.fire('files.Upload', { n });

    const stopFirst = new AbortController();
    const stopSecond = new AbortController();
    const runFirst = first.runRelay({
      workerId: 'first',
      signal: stopFirst.signal,
      concurrency: 1,
      sleep: shortSleep(),
    });
    await waitFor(() => sent.length === 1, 'the first relay to start its batch');
    // The second relay polls all the while the first works through its batch.
    const runSecond = second.runRelay({
      workerId: 'second',
      signal: stopSecond.signal,
      pollIntervalMs: 10,
      allowUnsafeConcurrency: dialect.name === 'sqlite',
    });
    try {
      await waitFor(
        async () => (await rowsOf(first, 'files.store')).every((r) => r.status === 'succeeded'),
        'the batch to be delivered',
      );
    } finally {
      stopFirst.abort();
      stopSecond.abort();
    }
    await Promise.all([runFirst, runSecond]);

    // It took more than two leases, and still every event went once, from the first relay.
    expect(sent).toEqual(['first:1', 'first:2', 'first:3']);
    expect(
      (await rowsOf(first, 'files.store')).map((r) => [r.status, r.attempts, r.claimedBy]),
    ).toEqual([
      ['succeeded', 1, 'first'],
      ['succeeded', 1, 'first'],
      ['succeeded', 1, 'first'],
    ]);
  });

  if (dialect.name === 'sqlite') {
    it('a SQLite relay keeps its single-relay lock through a batch longer than its lease', async () => {
      const sent: string[] = [];
      const tablePrefix = freshPrefix();
      const first = await openOutbox(db, slowConfig(sent, 'first'), { tablePrefix });
      const second = await openOutbox(db, slowConfig(sent, 'second'), {
        tablePrefix,
        sequelize: db.connectAgain(),
      });
      for (let n = 1; n <= EVENTS; n++) await first.fire('files.Upload', { n });
      const stop = new AbortController();
      const running = first.runRelay({
        workerId: 'first',
        signal: stop.signal,
        sleep: shortSleep(),
      });
      try {
        // Mid-batch, well past the first relay's lease of 450 ms.
        await waitFor(() => sent.length === 3, 'the third delivery to start');
        const refused = second.runRelay({ workerId: 'second', passes: 1 });
        await expect(refused).rejects.toBeInstanceOf(ConfigurationError);
      } finally {
        stop.abort();
      }
      const report = await running;
      expect(report.succeeded).toBe(EVENTS);
      expect(sent).toEqual(['first:1', 'first:2', 'first:3']);
    });
  }
});
