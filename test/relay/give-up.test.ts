import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import { captureLogger, freshPrefix, testClock } from './support.js';

describeEachDialect('relay: errors that are not transient', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Ping = event({ schema: z.object({ n: z.number() }) });
  const config = defineOutbox({
    events: { 'a.Ping': Ping },
    receivers: { 'a.r': receiver(Ping, { handle: () => {} }) },
  });

  it('a relay on an unmigrated database gives up after maxNonTransientErrorMs, with the error, instead of retrying for ever', async () => {
    const clock = testClock();
    const logger = captureLogger();
    // no migrate(): the outbox's tables do not exist
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      wakeup: null,
      logger,
      tablePrefix: freshPrefix(),
      clock: clock.now,
    });
    const waits: number[] = [];
    const error = await outbox
      .runRelay({
        maxNonTransientErrorMs: 10_000,
        // each wait moves the outbox's clock by what it was asked, at once
        sleep: async (ms) => {
          waits.push(ms);
          clock.advance(ms);
        },
      })
      .catch((e: unknown) => e);
    expect(String((error as Error).message)).toMatch(/does not exist|doesn't exist|no such table/);
    if (dialect.name === 'postgres') {
      // retried with backoff within the budget, then given up, saying what to do
      expect(waits.length).toBeGreaterThan(1);
      expect(waits.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(10_000);
      expect(logger.messages('error').at(-1)).toMatch(
        /^the relay gives up: its claims failed for \d+ s with an error that is not transient \(a missing table means: run `npx outbox migrate`\)$/,
      );
    }
  });

  it('refuses a maxNonTransientErrorMs that is not a number of milliseconds', async () => {
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      wakeup: null,
      logger: silentLogger,
      tablePrefix: freshPrefix(),
    });
    await expect(outbox.runRelay({ maxNonTransientErrorMs: -1 })).rejects.toThrow(
      'runRelay({ maxNonTransientErrorMs }) must be a number of milliseconds ≥ 0 (got -1)',
    );
  });
});
