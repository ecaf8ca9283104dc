/**
 * Issue 9: `outbox requeue-dead` and `outbox replay` wake a running `outbox relay` (another
 * process) through PostgreSQL's LISTEN/NOTIFY when they commit, so it delivers at once
 * rather than at the end of its poll. The commands run in-process, each on connections of
 * its own, so the wakeup still goes through the server: nothing in-process links them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { createOutbox, listenNotifyWakeup, type Outbox, silentLogger } from '../../src/index.js';
import { drainOutbox } from '../../testing/drain.js';
import { describePostgres } from '../relay/support.js';
import config from './fixtures/ping.config.js';
import {
  type CliDatabase,
  openCliDatabase,
  PING_CONFIG,
  receivedNumbers,
  waitFor,
} from './support/cli.js';
import { runCliInProcess, startCliInProcess } from './support/in-process.js';

/** A poll no test waits out: a delivery that comes within seconds came from the NOTIFY. */
const POLL_MS = '600000';

describePostgres('outbox requeue-dead and replay wake a running relay', () => {
  let db: CliDatabase;
  let dir: string;
  let received: string;
  let outbox: Outbox<typeof config>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-cli-wake-'));
    received = join(dir, 'received.txt');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(async () => {
    db = await openCliDatabase('postgres');
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
    await outbox.migrate();
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  it('a dead letter requeued, then an event replayed, are delivered by the idle relay within seconds', async () => {
    // A dead letter (n = 1), from this process: every attempt refused.
    await outbox.fire('test.Ping', { n: 1 });
    process.env.OUTBOX_TEST_FAIL = '1';
    try {
      await drainOutbox(outbox);
    } finally {
      delete process.env.OUTBOX_TEST_FAIL;
    }
    expect(await outbox.countDeliveries()).toMatchObject({ dead: 1 });

    const relay = startCliInProcess(
      ['relay', '-c', PING_CONFIG, '--poll-interval', POLL_MS, ...db.args],
      {
        env: { OUTBOX_TEST_RECEIVED: received },
      },
    );
    try {
      await waitFor(() => relay.output().stderr.includes('relay running'), 'the relay to start');
      // A probe, fired with the NOTIFY `outbox relay` listens for: delivered by the relay's
      // first pass (which comes after its LISTEN) or, if that pass already ran, by the
      // NOTIFY — so once it is delivered the relay listens, and sits in its ten-minute wait.
      const notifying = createOutbox(config, {
        ...db.outboxOptions,
        logger: silentLogger,
        wakeup: listenNotifyWakeup(),
      });
      const probe = await notifying.fire('test.Ping', { n: 2 });
      await notifying.close();
      await waitFor(() => receivedNumbers(received).includes(2), 'the relay to deliver the probe');

      const requeued = await runCliInProcess([
        'requeue-dead',
        '--all',
        '-c',
        PING_CONFIG,
        ...db.args,
      ]);
      expect(requeued.code).toBe(0);
      const requeuedAt = Date.now();
      await waitFor(
        () => receivedNumbers(received).includes(1),
        'the woken relay to deliver',
        10_000,
      );
      expect(Date.now() - requeuedAt).toBeLessThan(10_000);

      const replayed = await runCliInProcess(['replay', probe.id, '-c', PING_CONFIG, ...db.args]);
      expect(replayed.code).toBe(0);
      await waitFor(
        () => receivedNumbers(received).filter((n) => n === 2).length === 2,
        'the woken relay to deliver the replayed event',
        10_000,
      );
      expect(receivedNumbers(received)).toEqual([2, 1, 2]);
    } finally {
      relay.stop('SIGTERM');
      await relay.done;
    }
  }, 60_000);
});
