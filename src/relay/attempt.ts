import type { Transaction } from 'sequelize';
import type { ResolvedReceiver } from '../declare/define-outbox.js';
import type { DeliveryContext } from '../declare/types.js';
import { DeliveryTimeout, PayloadUpgradeFailed } from '../errors/outbox-error.js';
import { NotYet, PermanentFailure, RetryAfter } from '../errors/signals.js';
import { type Runtime, realScheduler, type TimerHandle } from '../runtime.js';
import type { ClaimedDelivery, Outcome } from '../storage/store.js';
import { DeadlineEntry, endDeadline, startDeadline } from './attempt-deadlines.js';
import { backoffSeconds } from './backoff.js';

/** The longest error text stored in `last_error`. */
export const MAX_ERROR_LENGTH = 2000;

/** The text stored for a failure: the message, with the cause's, truncated to the column. */
export function errorText(error: unknown): string {
  let text: string;
  if (error instanceof Error) {
    text = `${error.name}: ${error.message}`;
    if (error.cause instanceof Error)
      text += ` (caused by ${error.cause.name}: ${error.cause.message})`;
  } else {
    text = String(error);
  }
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}

/** The outcome of an attempt that went: succeeded, one more attempt spent. */
export function successOutcome(row: ClaimedDelivery, at: Date): Outcome {
  return {
    id: row.id,
    status: 'succeeded',
    attempts: row.attempts + 1,
    availableAt: null,
    lastError: null,
    completedAt: at,
  };
}

/** The outcome of a row whose receiver is no longer declared (as durable). */
export function orphanOutcome(row: ClaimedDelivery, at: Date): Outcome {
  return {
    id: row.id,
    status: 'orphaned',
    attempts: row.attempts,
    availableAt: null,
    lastError: `receiver ${row.receiverKey} is not declared as a durable receiver`,
    completedAt: at,
  };
}

/**
 * A row handed back without an attempt spent: it returns to the status it had before the
 * claim, claimable at once, its due time and last error untouched. What the relay records
 * when the database failed under a handler (a fault of the database, not of the receiver).
 */
export function handBackOutcome(row: ClaimedDelivery, now: Date): Outcome {
  return {
    id: row.id,
    status: row.attempts > 0 ? 'failed' : 'pending',
    attempts: row.attempts,
    availableAt: now,
    dueAt: row.dueAt,
    lastError: null,
    completedAt: null,
  };
}

/**
 * Decide what a failed attempt records. `PermanentFailure` dead-letters at once, and so
 * does `PayloadUpgradeFailed` (an event's `upgrade` hook threw: the same row through the
 * same code fails the same way on every retry); a spent
 * budget dead-letters; `RetryAfter` schedules the next attempt when the destination asked
 * (capped, counted); a deferral (`RetryAfter(…, { counts: false })`) spends no attempt
 * (see {@link deferralOutcome}); `NotYet` moves the row to its time without spending an
 * attempt; any other error waits a full-jitter backoff.
 */
export function failureOutcome(
  rt: Runtime,
  row: ClaimedDelivery,
  receiver: ResolvedReceiver | undefined,
  error: unknown,
  now: Date,
): Outcome {
  if (error instanceof NotYet) {
    return {
      id: row.id,
      status: 'pending',
      attempts: row.attempts,
      availableAt: error.until,
      dueAt: error.until,
      lastError: null,
      completedAt: null,
    };
  }
  const lastError = errorText(error);
  if (error instanceof RetryAfter && !error.counts) {
    if (receiver?.giveUpAfterSeconds !== undefined)
      return deferralOutcome(rt, row, receiver.giveUpAfterSeconds, error, lastError, now);
    // Nothing would ever end a deferral that spends nothing: counted after all, below.
    if (!rt.state.countedDeferralWarned.has(row.receiverKey)) {
      rt.state.countedDeferralWarned.add(row.receiverKey);
      rt.logger.warn(
        `receiver ${row.receiverKey} deferred with RetryAfter(${error.seconds}, { counts: false }) but declares no giveUpAfter, so nothing would ever end the delivery: the deferral is counted as an attempt (no jitter, no lane pause). Declare giveUpAfter on the receiver to defer without counting.`,
      );
    }
  }
  const attempts = row.attempts + 1;
  if (
    error instanceof PermanentFailure ||
    error instanceof PayloadUpgradeFailed ||
    attempts >= row.maxAttempts
  ) {
    return { id: row.id, status: 'dead', attempts, availableAt: null, lastError, completedAt: now };
  }
  let delaySeconds: number;
  if (error instanceof RetryAfter) {
    delaySeconds = cappedRetryAfter(rt, row, error);
  } else {
    const s = rt.config.settings.backoff;
    delaySeconds = backoffSeconds(attempts, {
      base: receiver?.backoff.baseSeconds ?? s.baseSeconds,
      cap: receiver?.backoff.capSeconds ?? s.capSeconds,
      jitter: rt.jitter(),
    });
  }
  return {
    id: row.id,
    status: 'failed',
    attempts,
    availableAt: new Date(now.getTime() + delaySeconds * 1000),
    lastError,
    completedAt: null,
  };
}

/**
 * A `RetryAfter`'s delay in seconds, clamped to `settings.maxRetryAfterSeconds` with a
 * warning naming both numbers.
 */
export function cappedRetryAfter(rt: Runtime, row: ClaimedDelivery, error: RetryAfter): number {
  const cap = rt.config.settings.maxRetryAfterSeconds;
  if (error.seconds > cap) {
    rt.logger.warn(
      `receiver ${row.receiverKey} asked to retry after ${error.seconds}s; clamped to settings.maxRetryAfterSeconds (${cap}s)`,
    );
  }
  return Math.min(error.seconds, cap);
}

/**
 * A deferral of a receiver declaring `giveUpAfter`: no attempt spent (so `maxAttempts`
 * cannot end it), the row `failed` with the message as `last_error`, the next attempt
 * between the (capped) seconds and twice that from now, spread by the jitter so a
 * throttled burst does not come back as one wave. Once the row has been owed longer than
 * `giveUpAfterSeconds` — since its due time, or since its event was recorded for a row
 * owed at once — the deferral dead-letters it instead, as a spent budget would.
 */
function deferralOutcome(
  rt: Runtime,
  row: ClaimedDelivery,
  giveUpAfterSeconds: number,
  error: RetryAfter,
  lastError: string,
  now: Date,
): Outcome {
  const owedSince = (row.dueAt ?? row.event.recordedAt).getTime();
  if (now.getTime() - owedSince > giveUpAfterSeconds * 1000) {
    return {
      id: row.id,
      status: 'dead',
      attempts: row.attempts,
      availableAt: null,
      lastError: `${lastError} (owed longer than giveUpAfter, ${giveUpAfterSeconds}s)`,
      completedAt: now,
    };
  }
  const seconds = cappedRetryAfter(rt, row, error);
  return {
    id: row.id,
    status: 'failed',
    attempts: row.attempts,
    availableAt: new Date(now.getTime() + seconds * (1 + rt.jitter()) * 1000),
    lastError,
    completedAt: null,
  };
}

/**
 * Whether an attempt's result is a deferral that pauses its lane: a non-counting
 * `RetryAfter` of a receiver declaring `giveUpAfter`, recorded `failed` (not the one that
 * dead-lettered it). Returns the pause in seconds (the capped delay), or undefined.
 */
export function deferralPause(
  rt: Runtime,
  receiver: ResolvedReceiver | undefined,
  outcome: Outcome,
  error: unknown,
): number | undefined {
  if (!(error instanceof RetryAfter) || error.counts) return undefined;
  if (receiver?.giveUpAfterSeconds === undefined || outcome.status !== 'failed') return undefined;
  return Math.min(error.seconds, rt.config.settings.maxRetryAfterSeconds);
}

/** The time limit of one attempt of `receiver`, in seconds. */
export function timeoutSeconds(rt: Runtime, receiver: ResolvedReceiver): number {
  return receiver.timeoutSeconds ?? rt.config.settings.deliveryTimeoutSeconds;
}

/**
 * One attempt's `AbortSignal` and time limit. The signal fires when the limit runs out
 * (its reason a {@link DeliveryTimeout}) and when the relay is told to stop; only the
 * limit ends the attempt early (`run` rejects with the timeout), since a stopping relay
 * finishes the delivery in hand — unless the receiver itself gives up on the signal, and
 * then the row is handed back, not charged. Dispose it in `finally`: its timer and
 * listener go.
 *
 * On the relay's hot path (a transport's `deliver` per row) most receivers never read the
 * signal, so the controller and the stop listener are made only when `signal` is first
 * read, and the timeout error only when the limit runs out.
 */
export class Attempt extends DeadlineEntry {
  #controller: AbortController | undefined;
  /** The limit's timer on an injected scheduler; on the real one the limit is a deadline. */
  readonly #timer: TimerHandle | undefined;
  /** Told the timeout once the limit runs out: `run`'s reject, or `onExpire`'s callback. */
  #reject: ((timeout: DeliveryTimeout) => void) | undefined;
  readonly #stop: AbortSignal | undefined;
  #onStop: (() => void) | undefined;
  #timeout: DeliveryTimeout | undefined;
  #stopped = false;
  readonly #receiverKey: string;
  readonly #deliveryId: string;
  readonly #seconds: number;

  constructor(rt: Runtime, receiver: ResolvedReceiver, row: ClaimedDelivery, stop?: AbortSignal) {
    super();
    this.#receiverKey = receiver.key;
    this.#deliveryId = row.id;
    this.#seconds = timeoutSeconds(rt, receiver);
    this.#stop = stop;
    // On Node's timers, one timer per limit for every attempt (attempt-deadlines.ts); an
    // injected scheduler (a test's clock) times each attempt itself.
    if (rt.scheduler === realScheduler) startDeadline(this, this.#seconds * 1000);
    else this.#timer = rt.scheduler.setTimeout(() => this.expire(), this.#seconds * 1000);
  }

  /** @internal The limit ran out: the signal fires with a {@link DeliveryTimeout}, `run` rejects. */
  override expire(): void {
    this.#timeout = new DeliveryTimeout({
      deliveryId: this.#deliveryId,
      receiverKey: this.#receiverKey,
      timeoutSeconds: this.#seconds,
    });
    this.#controller?.abort(this.#timeout);
    this.#reject?.(this.#timeout);
  }

  /**
   * Whether `error` is the receiver giving up because the relay is stopping: the signal
   * fired for the stop, and what was thrown is its reason or an `AbortError`.
   */
  gaveUpOnStop(error: unknown): boolean {
    if (!this.#stopped) return false;
    if (error === this.#controller?.signal.reason) return true;
    return (error as { name?: unknown } | null)?.name === 'AbortError';
  }

  /** The attempt's signal, for the receiver (made on first read). */
  get signal(): AbortSignal {
    if (this.#controller) return this.#controller.signal;
    const controller = new AbortController();
    this.#controller = controller;
    const stop = this.#stop;
    if (this.#timeout) controller.abort(this.#timeout);
    else if (stop) {
      const onStop = () => {
        if (controller.signal.aborted) return;
        this.#stopped = true;
        controller.abort(stop.reason);
      };
      if (stop.aborted) onStop();
      else {
        this.#onStop = onStop;
        stop.addEventListener('abort', onStop, { once: true });
      }
    }
    return controller.signal;
  }

  /**
   * Call `fail` with the {@link DeliveryTimeout} once the limit runs out (at once if it
   * has): the callback form of {@link run}, for a caller that settles a promise of its own.
   */
  onExpire(fail: (timeout: DeliveryTimeout) => void): void {
    if (this.#timeout) fail(this.#timeout);
    else this.#reject = fail;
  }

  /** Await `work`, or reject with the {@link DeliveryTimeout} once the limit runs out. */
  run<T>(work: Promise<T>): Promise<T> {
    if (this.#timeout) return Promise.reject(this.#timeout);
    return new Promise<T>((resolve, reject) => {
      this.#reject = reject;
      work.then(resolve, reject);
    });
  }

  dispose(): void {
    if (this.#timer) this.#timer.cancel();
    else endDeadline(this);
    if (this.#onStop) this.#stop?.removeEventListener('abort', this.#onStop);
  }
}

/**
 * The delivery context of one attempt: frozen data read off the row, and the attempt's
 * signal, made only when a receiver reads it. A class, so the hot path builds no closure
 * per delivery.
 */
export class AttemptContext implements DeliveryContext {
  readonly receiverKey: string;
  readonly deliveryId: string;
  readonly attempt: number;
  readonly target: string;
  readonly dueAt: Date | null;
  readonly tenant: string | null;
  readonly transaction: Transaction | undefined;
  readonly #attempt: Attempt;

  constructor(
    receiverKey: string,
    row: ClaimedDelivery,
    attempt: Attempt,
    transaction?: Transaction,
  ) {
    this.receiverKey = receiverKey;
    this.deliveryId = row.id;
    this.attempt = row.attempts + 1;
    this.target = row.target;
    this.dueAt = row.dueAt ?? row.event.recordedAt;
    this.tenant = row.event.tenant;
    this.transaction = transaction;
    this.#attempt = attempt;
  }

  get signal(): AbortSignal {
    return this.#attempt.signal;
  }
}
