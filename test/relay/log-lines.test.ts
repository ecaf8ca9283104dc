/**
 * Issue 33: the relay's per-delivery log lines carry the delivery's identity as fields
 * (`receiver`, `deliveryId`, `eventId`, `attempt`), in the JSON shape the CLI's own lines
 * have; and a running relay says what it did every summary interval, on the outbox's
 * scheduler (fake time here: no real seconds slept).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineOutbox,
  event,
  jsonLogger,
  type OutboxLogger,
  PermanentFailure,
  receiver,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  captureLogger,
  fakeTime,
  openOutbox,
  rowsOf,
  shortSleep,
  testClock,
  tickUntil,
} from './support.js';

describeEachDialect('relay: log lines', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Signup = event({ schema: z.object({ user: z.string() }) });
  const config = defineOutbox({
    events: { 'crm.Signup': Signup },
    receivers: {
      'crm.welcome': receiver(Signup, { handle: () => {} }),
      'crm.flaky': receiver(Signup, {
        deliver: async () => {
          throw new Error('503');
        },
      }),
      'crm.gone': receiver(Signup, {
        handle: () => {
          throw new PermanentFailure('410');
        },
      }),
    },
    settings: { backoff: { baseSeconds: 10, capSeconds: 10 } },
  });

  it('the failure and dead-letter lines name the receiver, delivery, event and attempt as fields, beside msg in JSON', async () => {
    const logger = captureLogger();
    const lines: string[] = [];
    const json = jsonLogger({
      stream: {
        write: (l: string) => {
          lines.push(l);
          return true;
        },
      },
    });
    // Kept as entries and written as JSON lines, both.
    const both = {
      debug: () => {},
      ...Object.fromEntries(
        (['info', 'warn', 'error'] as const).map((level) => [
          level,
          (m: string, f?: Record<string, unknown>) => {
            logger[level](m, f);
            json[level](m, f);
          },
        ]),
      ),
    } as unknown as OutboxLogger;
    const outbox = await openOutbox(db, config, { clock: testClock().now, logger: both });
    try {
      const fired = await outbox.fire('crm.Signup', { user: 'ada' });
      await outbox.runRelay({ passes: 1, sleep: shortSleep(), summaryIntervalMs: 0 });
      const [flaky] = await rowsOf(outbox, 'crm.flaky');
      const [gone] = await rowsOf(outbox, 'crm.gone');
      const failed = logger.entries.find((e) => e.message.includes('to crm.flaky failed'));
      expect(failed?.fields).toMatchObject({
        receiver: 'crm.flaky',
        deliveryId: flaky.id,
        eventId: fired.id,
        eventName: 'crm.Signup',
        attempt: 1,
      });
      const dead = logger.entries.find((e) => e.message.includes('to crm.gone is dead-lettered'));
      expect(dead?.fields).toMatchObject({
        receiver: 'crm.gone',
        deliveryId: gone.id,
        eventId: fired.id,
        attempt: 1,
      });
      // The JSON line: time, level, msg, and the fields at the top level.
      const line = lines
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => String(l.msg).includes('to crm.gone is dead-lettered'));
      expect(Object.keys(line ?? {}).slice(0, 3)).toEqual(['time', 'level', 'msg']);
      expect(line).toMatchObject({
        level: 'error',
        receiver: 'crm.gone',
        deliveryId: gone.id,
        eventId: fired.id,
        attempt: 1,
      });
    } finally {
      await outbox.close();
    }
  });

  it('a running relay logs one summary line per interval at info: delivered, failed, dead since the last line, and owed now', async () => {
    const time = fakeTime();
    const logger = captureLogger();
    const outbox = await openOutbox(db, config, {
      clock: time.now,
      scheduler: time.scheduler,
      logger,
    });
    const stop = new AbortController();
    let ended = false;
    const running = outbox
      .runRelay({ workerId: 'w1', signal: stop.signal, pollIntervalMs: 1_000 })
      .finally(() => {
        ended = true;
      });
    const summaries = () => logger.messages('info').filter((m) => m.startsWith('relay w1:'));
    try {
      await outbox.fire('crm.Signup', { user: 'ada' });
      await outbox.fire('crm.Signup', { user: 'bob' });
      // Every row settles: crm.welcome delivered, crm.gone dead at once, crm.flaky dead
      // after its 5 attempts (4 failures, 5 s backoffs at jitter 0.5).
      const settled = async () => {
        const rows = [
          ...(await rowsOf(outbox, 'crm.welcome')),
          ...(await rowsOf(outbox, 'crm.flaky')),
          ...(await rowsOf(outbox, 'crm.gone')),
        ];
        return (
          rows.length === 6 && rows.every((r) => r.status === 'succeeded' || r.status === 'dead')
        );
      };
      await tickUntil(time, settled, 'every row to settle', 1_000);
      const before = summaries().length;
      await tickUntil(time, () => summaries().length > before, 'a summary line after that', 1_000);
      for (const line of summaries()) {
        expect(line).toMatch(
          /^relay w1: delivered \d+, failed \d+, dead \d+ in the last 60s; owed \d+$/,
        );
      }
      // Each line counts what happened since the one before: together, everything once.
      const fields = summaries().map(
        (m) => logger.entries.find((e) => e.message === m)?.fields as Record<string, number>,
      );
      const sum = (key: string) => fields.reduce((n, f) => n + f[key], 0);
      expect([sum('delivered'), sum('failed'), sum('dead')]).toEqual([2, 8, 4]);
      expect(fields.at(-1)).toMatchObject({ workerId: 'w1', owed: 0, intervalMs: 60_000 });
      expect(Object.keys(fields[0]).sort()).toEqual([
        'dead',
        'delivered',
        'failed',
        'handedBack',
        'intervalMs',
        'orphaned',
        'owed',
        'workerId',
      ]);
    } finally {
      stop.abort();
    }
    await tickUntil(time, () => ended, 'the relay to stop', 1_000);
    await running;
    await outbox.close();
  });
});
