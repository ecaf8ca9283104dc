import { describe, expect, it } from 'vitest';
import { ClaimFailureLog } from '../../src/observe/claim-failures.js';
import { captureLogger, refused } from './support.js';

function setup() {
  let at = Date.parse('2031-03-01T12:00:00.000Z');
  const logger = captureLogger();
  const log = new ClaimFailureLog(logger, () => new Date(at));
  return {
    logger,
    log,
    advance: (ms: number) => {
      at += ms;
    },
  };
}

/**
 * Fail `n` claims, `everyMs` apart, each waiting `retryMs` (by default the relay's backoff,
 * doubling from 20 ms).
 */
function failClaims(
  { log, advance }: ReturnType<typeof setup>,
  n: number,
  everyMs: number,
  retryMs?: number,
) {
  const error = refused();
  for (let i = 0; i < n; i++) {
    log.failed(error, retryMs ?? Math.min(20 * 2 ** i, 15_000), true);
    advance(everyMs);
  }
}

describe('ClaimFailureLog: an outage is logged once', () => {
  it('logs the first failures one line each, then says the database is unreachable once and goes quiet', () => {
    const t = setup();
    failClaims(t, 30, 1_000);
    expect(t.logger.messages()).toEqual([
      'claim failed; retrying in 20 ms',
      'claim failed; retrying in 40 ms',
      'claim failed; retrying in 80 ms',
      'claim failed; retrying in 160 ms',
      'claim failed; retrying in 320 ms — database unreachable: 5 failed claims in a row; retrying with backoff, logged once a minute until a claim succeeds',
    ]);
    expect(t.logger.entries.every((e) => e.level === 'warn')).toBe(true);
    expect(t.logger.entries[0].fields).toMatchObject({ failures: 1 });
    expect(t.logger.entries[0].fields?.error).toBeInstanceOf(Error);
  });

  it('reminds at most once a minute while the database stays away', () => {
    const t = setup();
    failClaims(t, 5, 1_000);
    failClaims(t, 10, 15_000, 15_000); // from 5 s to 155 s, a claim every 15 s
    expect(t.logger.messages().slice(5)).toEqual([
      'database still unreachable after 65.0 s (10 failed claims); retrying every 15000 ms',
      'database still unreachable after 125.0 s (14 failed claims); retrying every 15000 ms',
    ]);
  });

  it('says once that the database is back, and how long it was away', () => {
    const t = setup();
    failClaims(t, 12, 2_500);
    t.log.succeeded();
    t.log.succeeded();
    const last = t.logger.entries.at(-1)!;
    expect(last).toMatchObject({
      level: 'info',
      message: 'database reachable again after 30.0 s (12 failed claims); claiming again',
      fields: { failures: 12, outageMs: 30_000 },
    });
    expect(t.logger.messages('info')).toHaveLength(1);
    expect(t.log.failures).toBe(0);
  });

  it('a blip is closed with a line of its own, and the next outage starts afresh', () => {
    const t = setup();
    failClaims(t, 2, 100);
    t.log.succeeded();
    failClaims(t, 1, 100);
    expect(t.logger.messages()).toEqual([
      'claim failed; retrying in 20 ms',
      'claim failed; retrying in 40 ms',
      'claims succeed again after 0.2 s (2 failed claims)',
      'claim failed; retrying in 20 ms',
    ]);
  });

  it('logs at once when the error changes during an outage (the database came back unmigrated)', () => {
    const t = setup();
    failClaims(t, 6, 1_000);
    const missing = Object.assign(new Error('relation "outbox_deliveries" does not exist'), {
      name: 'SequelizeDatabaseError',
      code: '42P01',
    });
    t.log.failed(missing, 640, false);
    t.log.failed(missing, 1_280, false);
    expect(t.logger.entries.slice(5).map((e) => [e.level, e.message])).toEqual([
      [
        'error',
        'claims still failing after 6.0 s (7 failed claims), now with another error; retrying in 640 ms',
      ],
    ]);
  });

  it('a failure that is not transient is an error, and its collapse line does not blame reachability', () => {
    const t = setup();
    for (let i = 0; i < 5; i++) t.log.failed(new Error('permission denied'), 20, false);
    t.log.succeeded();
    expect(t.logger.entries.map((e) => e.level)).toEqual([
      'error',
      'error',
      'error',
      'error',
      'error',
      'info',
    ]);
    expect(t.logger.messages()[4]).toBe(
      'claim failed; retrying in 20 ms — 5 failed claims in a row; retrying with backoff, logged once a minute until a claim succeeds',
    );
    expect(t.logger.messages()[5]).toBe('claims succeed again after 0.0 s (5 failed claims)');
  });
});
