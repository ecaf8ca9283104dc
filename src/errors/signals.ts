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

/** Options of {@link RetryAfter}. */
export interface RetryAfterOptions {
  /**
   * Whether the attempt counts against `maxAttempts`. `false` makes it a *deferral*: for a
   * destination limiting how much it accepts (a throttle, a quota) rather than refusing
   * this row. No attempt is spent; what ends the delivery is the receiver's `giveUpAfter`
   * (a bound in time from when the row became owed, past which the next deferral
   * dead-letters it). The next attempt runs between `seconds` and twice that from now —
   * never earlier than asked, spread so a throttled burst does not come back as one wave —
   * and the relay that ran it pauses the receiver's lane for `seconds`, handing the rest of
   * the lane's batch back rather than spending a call on each row to learn what the first
   * already said. A receiver without `giveUpAfter` has nothing that would ever end such a
   * delivery, so there the deferral is counted after all (no jitter, no pause), with one
   * warning per process naming the receiver.
   * @defaultValue true
   */
  readonly counts?: boolean;
  /** The message stored as `last_error`. @defaultValue `retry after {seconds}s` */
  readonly message?: string;
}

/**
 * Raised by a durable receiver to say when its next attempt should run.
 *
 * The relay schedules the retry `seconds` from now instead of drawing it from the backoff
 * curve: a 429 or 503 carrying `Retry-After: 120` is a destination telling us the answer,
 * and the exponential curve is a guess. By default it consumes an attempt, so a
 * destination answering 429 forever still ends in a dead letter when the budget is spent;
 * a receiver expecting rate limits widens `maxAttempts`, or defers with
 * `{ counts: false }` (see {@link RetryAfterOptions.counts}).
 *
 * The delay is capped by `settings.maxRetryAfterSeconds` (clamped with a warning naming
 * both numbers): not the backoff cap, since clamping a legitimate one-hour Retry-After to
 * a backoff ceiling would hammer a destination that asked to be left alone.
 *
 * `new RetryAfter(seconds, message?)` and `new RetryAfter(seconds, { counts, message })`.
 * A negative delay is refused here; so is zero for a deferral, which would come straight
 * back and, spending nothing, loop until `giveUpAfter`.
 */
export class RetryAfter extends Error {
  /** How long to wait before the next attempt, in seconds (≥ 0; > 0 for a deferral). */
  readonly seconds: number;
  /** Whether the attempt counts against `maxAttempts` (false: a deferral). */
  readonly counts: boolean;

  constructor(seconds: number, messageOrOptions?: string | RetryAfterOptions) {
    const options: RetryAfterOptions =
      typeof messageOrOptions === 'string'
        ? { message: messageOrOptions }
        : (messageOrOptions ?? {});
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
      throw new TypeError(`RetryAfter(seconds) needs a finite number ≥ 0 (got ${String(seconds)})`);
    }
    const counts = options.counts ?? true;
    if (typeof counts !== 'boolean') {
      throw new TypeError(
        `RetryAfter(seconds, { counts }) must be true or false (got ${String(counts)})`,
      );
    }
    if (!counts && seconds === 0) {
      throw new RangeError(
        'RetryAfter(seconds, { counts: false }) needs a wait above zero (got 0): a deferral that spends nothing and comes straight back would loop until giveUpAfter',
      );
    }
    super(options.message ?? `retry after ${seconds}s`);
    this.name = 'RetryAfter';
    this.seconds = seconds;
    this.counts = counts;
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
