import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { backoffSeconds, defineOutbox, event, receiver } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import { openOutbox, rowsOf, shortSleep, T0, testClock } from './support.js';

describe('backoffSeconds (full jitter, capped)', () => {
  const curve = (jitter: number) =>
    [1, 2, 3, 4, 5, 6, 7, 8].map((attempt) =>
      backoffSeconds(attempt, { base: 2, cap: 60, jitter }),
    );

  it('the ceiling doubles from the base with each attempt and stops at the cap', () => {
    // jitter just below 1 reads the ceiling itself: 2, 4, 8, 16, 32, then the cap.
    expect(curve(0.999_999).map((s) => Math.round(s))).toEqual([2, 4, 8, 16, 32, 60, 60, 60]);
  });

  it('the delay is drawn from the whole window up to the ceiling, not added on top of it', () => {
    expect(curve(0)).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(curve(0.5)).toEqual([1, 2, 4, 8, 16, 30, 30, 30]);
    expect(curve(0.25)).toEqual([0.5, 1, 2, 4, 8, 15, 15, 15]);
  });

  it('is a pure function of its arguments', () => {
    expect(backoffSeconds(3, { base: 1, cap: 3600, jitter: 0.3 })).toBe(
      backoffSeconds(3, { base: 1, cap: 3600, jitter: 0.3 }),
    );
  });

  it('a huge attempt number stays at the cap instead of overflowing', () => {
    expect(backoffSeconds(5000, { base: 1, cap: 3600, jitter: 0.5 })).toBe(1800);
  });

  it('refuses an attempt below 1 and a jitter outside [0, 1)', () => {
    expect(() => backoffSeconds(0, { base: 1, cap: 10, jitter: 0.5 })).toThrow(
      'attempt must be an integer ≥ 1 (got 0)',
    );
    expect(() => backoffSeconds(1, { base: 1, cap: 10, jitter: 1 })).toThrow(
      'jitter must be in [0, 1) (got 1)',
    );
    expect(() => backoffSeconds(1, { base: 1, cap: 10, jitter: -0.1 })).toThrow(RangeError);
  });
});

describeEachDialect('relay: retry backoff', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Ping = event({ schema: z.object({ n: z.number() }) });
  const failing = () => {
    throw new Error('down');
  };
  const config = defineOutbox({
    events: { 'ops.Ping': Ping },
    receivers: {
      'ops.default': receiver(Ping, { handle: failing, maxAttempts: 10 }),
      'ops.patient': receiver(Ping, {
        handle: failing,
        maxAttempts: 10,
        backoff: { baseSeconds: 300, capSeconds: 900 },
      }),
      'ops.capped': receiver(Ping, {
        deliver: async () => failing(),
        maxAttempts: 10,
        backoff: { capSeconds: 3 },
      }),
    },
    settings: { backoff: { baseSeconds: 2, capSeconds: 60 } },
  });

  it("a failed attempt waits a full-jitter delay drawn from the doubling curve, and a receiver's backoff overrides the settings", async () => {
    const clock = testClock();
    const jitters = [0.5];
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => jitters[0] });
    await outbox.fire('ops.Ping', { n: 1 });

    const at = (s: number) => new Date(clock.now().getTime() + s * 1000);
    const expected: Record<string, Date[]> = {
      'ops.default': [],
      'ops.patient': [],
      'ops.capped': [],
    };
    for (let attempt = 1; attempt <= 4; attempt++) {
      // default: settings base 2, cap 60 → ceilings 2, 4, 8, 16
      expected['ops.default'].push(at(Math.min(60, 2 * 2 ** (attempt - 1)) * 0.5));
      // patient: its own base 300 and cap 900 → ceilings 300, 600, 900, 900
      expected['ops.patient'].push(at(Math.min(900, 300 * 2 ** (attempt - 1)) * 0.5));
      // capped: base from the settings (2), its own cap 3 → 2, 3, 3, 3
      expected['ops.capped'].push(at(Math.min(3, 2 * 2 ** (attempt - 1)) * 0.5));
      const report = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
      expect(report.failed).toBe(3);
      for (const key of Object.keys(expected)) {
        const [row] = await rowsOf(outbox, key);
        expect({ key, attempts: row.attempts, availableAt: row.availableAt }).toEqual({
          key,
          attempts: attempt,
          availableAt: expected[key][attempt - 1],
        });
      }
      // Move past every scheduled retry for the next round.
      clock.advance(1_000_000);
    }
  });

  it('a jitter of zero retries at once and a jitter near one waits the whole ceiling', async () => {
    const clock = testClock();
    let jitter = 0;
    const outbox = await openOutbox(db, config, { clock: clock.now, jitter: () => jitter });
    await outbox.fire('ops.Ping', { n: 2 });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect((await rowsOf(outbox, 'ops.default'))[0].availableAt).toEqual(T0);

    jitter = 0.999;
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect((await rowsOf(outbox, 'ops.default'))[0]).toMatchObject({
      attempts: 2,
      // second failure: ceiling 4 s
      availableAt: new Date(T0.getTime() + 3_996),
    });
  });
});
