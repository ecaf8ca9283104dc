import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AnyEvent,
  ConfigurationError,
  defineOutbox,
  event,
  inProcessWakeup,
  receiver,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import { describeSplittingDialects, openOutbox, rowsOf, shortSleep, waitFor } from './support.js';

const payload = z.object({ n: z.number() });
const NAMES = [
  'library.BookAdded',
  'library.LoanEnded',
  'lib_x.Added',
  'libX.Added',
  'shop.Placed',
  'taskiq',
];

/** Every event of NAMES, and one wildcard receiver logging `name:n`. */
function topicsConfig() {
  const seen: string[] = [];
  const config = defineOutbox({
    events: Object.fromEntries(NAMES.map((name) => [name, event({ schema: payload })])),
    receivers: {
      'bridge.all': receiver(AnyEvent, {
        handle: (e) => void seen.push(`${e.name}:${(e.payload as { n: number }).n}`),
      }),
    },
  });
  return { config, seen };
}

describeEachDialect('relay: topics', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  async function firedAll(config: ReturnType<typeof topicsConfig>['config']) {
    const outbox = await openOutbox(db, config);
    for (const name of NAMES) await outbox.fire(name as never, { n: 1 } as never);
    return outbox;
  }

  it('relays of different topics share one table: each claims, delivers and counts only its topics', async () => {
    const { config, seen } = topicsConfig();
    const outbox = await firedAll(config);
    const library = await outbox.runRelay({
      topics: ['library.*'],
      untilIdle: true,
      concurrency: 1,
      sleep: shortSleep(),
    });
    expect(library.succeeded).toBe(2);
    expect(seen).toEqual(['library.BookAdded:1', 'library.LoanEnded:1']);
    const rest = await outbox.runRelay({
      excludeTopics: ['taskiq', 'lib*'],
      untilIdle: true,
      sleep: shortSleep(),
    });
    expect(rest.succeeded).toBe(1);
    expect(seen.at(-1)).toBe('shop.Placed:1');
    const tasks = await outbox.runRelay({
      topics: ['taskiq'],
      untilIdle: true,
      sleep: shortSleep(),
    });
    expect(tasks.succeeded).toBe(1);
    expect((await rowsOf(outbox, 'bridge.all')).filter((r) => r.status === 'pending')).toHaveLength(
      2,
    );
  });

  it('in a topic pattern _ is a plain character, not a wildcard', async () => {
    const { config, seen } = topicsConfig();
    const outbox = await firedAll(config);
    await outbox.runRelay({ topics: ['lib_*'], untilIdle: true, sleep: shortSleep() });
    expect(seen).toEqual(['lib_x.Added:1']);
  });

  it('a topic pattern with a * or ? anywhere but its end is refused', async () => {
    const { config } = topicsConfig();
    const outbox = await openOutbox(db, config);
    await expect(
      outbox.runRelay({ topics: ['lib*rary.*'] }),
    ).rejects.toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: runRelay({ topics }): "lib*rary.*" is not a topic pattern: only a prefix ending in one * is (e.g. "library.*"); * and ? elsewhere are refused]`,
    );
    await expect(outbox.runRelay({ excludeTopics: ['library.?'] })).rejects.toThrow(
      ConfigurationError,
    );
    await expect(outbox.runRelay({ topics: [''] })).rejects.toThrow('(got "")');
    await expect(outbox.deliverPending({ topics: ['*x'] })).rejects.toThrow(
      'deliverPending({ topics })',
    );
  });

  it('deliverPending delivers only its topics', async () => {
    const { config, seen } = topicsConfig();
    const outbox = await firedAll(config);
    expect(await outbox.deliverPending({ topics: ['shop.*', 'taskiq'] })).toMatchObject({
      succeeded: 2,
    });
    expect(seen).toEqual(['shop.Placed:1', 'taskiq:1']);
    expect(await outbox.deliverPending({ excludeTopics: ['lib*'] })).toMatchObject({
      succeeded: 0,
    });
  });

  it("a wakeup naming topics wakes the relay only when one of them is the relay's", async () => {
    const { config } = topicsConfig();
    const wakeup = inProcessWakeup();
    const outbox = await openOutbox(db, config, { wakeup });
    const idles: AbortSignal[] = [];
    const relay = outbox.runRelay({
      topics: ['library.*'],
      passes: 2,
      sleep: (_ms, signal) =>
        new Promise<void>((resolve) => {
          idles.push(signal);
          if (signal.aborted) resolve();
          signal.addEventListener('abort', () => resolve(), { once: true });
        }),
    });
    await waitFor(() => idles.length === 1, 'the relay to idle');
    wakeup.signal(['shop.Placed', 'taskiq']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(idles[0].aborted).toBe(false);
    wakeup.signal(['shop.Placed', 'library.BookAdded']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(idles[0].aborted).toBe(true);
    expect((await relay).passes).toBe(2);
    await wakeup.close();
  });
});

describeSplittingDialects('relay: relays of different topics at once', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('each delivers its own topics, every event once', async () => {
    const { config, seen } = topicsConfig();
    const outbox = await openOutbox(db, config);
    for (let n = 0; n < 40; n++)
      for (const name of NAMES) await outbox.fire(name as never, { n } as never);
    const [library, rest] = await Promise.all([
      outbox.runRelay({
        topics: ['library.*'],
        untilIdle: true,
        batchSize: 9,
        sleep: shortSleep(),
      }),
      outbox.runRelay({
        excludeTopics: ['library.*'],
        untilIdle: true,
        batchSize: 9,
        sleep: shortSleep(),
      }),
    ]);
    expect(library.succeeded).toBe(80);
    expect(rest.succeeded).toBe(160);
    expect(new Set(seen).size).toBe(240);
    expect(seen).toHaveLength(240);
  });
});
