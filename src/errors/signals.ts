/**
 * Raised by a durable receiver to say this delivery can never succeed.
 *
 * The relay dead-letters the row on the attempt that raised it instead of spending the
 * rest of the attempt budget: a receiver that already knows the destination is gone (a
 * 410 Gone, a deleted account, a revoked credential) should not retry for hours against
 * something that said it will never accept another.
 *
 * Only the relay reads it. An `inline` receiver raising it fails the caller's transaction
 * like any other error; an `onCommit` one has it logged.
 */
export class PermanentFailure extends Error {
  constructor(message = 'permanent failure', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PermanentFailure';
  }
}

/**
 * Raised by a durable receiver to say when its next attempt should run.
 *
 * The relay schedules the retry `seconds` from now instead of drawing it from the backoff
 * curve: a 429 or 503 carrying `Retry-After: 120` is a destination telling us the answer,
 * and the exponential curve is a guess. It consumes an attempt (the counting form), so a
 * destination answering 429 forever still ends in a dead letter when the budget is spent;
 * a receiver expecting rate limits widens `maxAttempts`.
 *
 * The delay is capped by `settings.maxRetryAfterSeconds` (clamped with a warning).
 */
export class RetryAfter extends Error {
  /** How long to wait before the next attempt, in seconds (≥ 0). */
  readonly seconds: number;

  constructor(seconds: number, message?: string) {
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
      throw new TypeError(`RetryAfter(seconds) needs a finite number ≥ 0 (got ${String(seconds)})`);
    }
    super(message ?? `retry after ${seconds}s`);
    this.name = 'RetryAfter';
    this.seconds = seconds;
  }
}

/**
 * Raised by a durable receiver to say its work is not due until `until`.
 *
 * The row is moved to `until` with no attempt spent. `until` must be in the future when
 * the error is built: a time already come would be claimed straight back, a hot loop.
 */
export class NotYet extends Error {
  /** When the delivery should run again. */
  readonly until: Date;

  constructor(until: Date) {
    if (!(until instanceof Date) || Number.isNaN(until.getTime())) {
      throw new TypeError('NotYet(until) needs a valid Date');
    }
    if (until.getTime() <= Date.now()) {
      throw new RangeError(`NotYet(until) needs a time in the future (got ${until.toISOString()})`);
    }
    super(`not due until ${until.toISOString()}`);
    this.name = 'NotYet';
    this.until = until;
  }
}
