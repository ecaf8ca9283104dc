import { ConfigurationError } from '../errors/outbox-error.js';
import type { OutboxLogger } from '../observe/logger.js';
import { realScheduler, type Scheduler, type TimerHandle } from '../runtime.js';
import { dispatchSignal } from './dispatch.js';

/**
 * The one reconnect loop of every wakeup that holds a subscription of its own (a
 * PostgreSQL `LISTEN`, a Redis `SUBSCRIBE`, a RabbitMQ queue, a Kafka consumer), so they
 * all count, back off, give up and recover the same way (the topic-outbox reference's
 * "Wakeups": "a subscription that fails is retried with backoff and, after five failures
 * in a row, given up with an ERROR — the relay keeps polling"):
 *
 * - the subscription opens when the first listener comes and is given back when the last
 *   one leaves (a later listener opens it again);
 * - a failed attempt, or a live subscription lost, is a failure; the next attempt comes
 *   after `baseDelayMs · 2^failures` (500 ms after the first with the default base),
 *   doubling, capped at `maxDelayMs`;
 * - on the `maxFailures`-th failure IN A ROW it gives up with an ERROR and schedules
 *   nothing more; relays poll on. A subscription that holds resets the count;
 * - once a subscription holds after a failure every listener is signalled with no topics,
 *   since a signal sent while none held was lost;
 * - a `ConfigurationError` from `connect` (a missing client package, no connection
 *   settings) is not retried: it rejects the `listen()` that asked, before anything runs.
 */
export interface SubscriptionSpec<L> {
  /**
   * What is subscribed, for the give-up ERROR: `LISTEN on "outboxkit"` reads
   * `LISTEN on "outboxkit" failed 5 time(s) in a row; giving up …`.
   */
  readonly what: string;
  /** The WARNING when an attempt fails (the error's message goes in its data). */
  readonly failedWarning: string;
  /** The WARNING when a live subscription is lost. */
  readonly lostWarning: string;
  /**
   * Open one subscription, resolving once it holds: a signal sent after it resolves must
   * be heard. `events.signal` hands a received signal to the listeners; `events.lost` says
   * the subscription broke (the connection closed, the consumer crashed) — call it at most
   * once; later calls are ignored. Reject when the attempt fails.
   */
  connect(events: SubscriptionEvents): Promise<L>;
  /** Give a subscription back (never throws to the caller: failures are swallowed). */
  disconnect(link: L): Promise<void>;
  /** Where warnings and the give-up ERROR go; read at each use (a wakeup adopts the outbox's). */
  logger(): OutboxLogger;
  /** @defaultValue 5 */
  readonly maxFailures?: number;
  /** @defaultValue 250 */
  readonly baseDelayMs?: number;
  /** @defaultValue 15000 */
  readonly maxDelayMs?: number;
  /** The backoff's timers, so a test moves time. @defaultValue Node's timers, unref'd */
  readonly scheduler?: Scheduler;
}

/** What a subscription tells the loop. */
export interface SubscriptionEvents {
  signal(topics: readonly string[]): void;
  lost(error?: unknown): void;
}

/** The listeners of a wakeup over one {@link SubscriptionSpec}. */
export interface ReconnectingSubscription {
  /**
   * Add a listener, opening the subscription if none is open or opening; resolves once the
   * attempt in hand is over (held, or failed and retried in the background). Resolves to
   * the unsubscribe function; removing the last listener gives the subscription back.
   * @throws ConfigurationError from `connect`: the wakeup cannot work as configured.
   */
  listen(onSignal: (topics: readonly string[]) => void): Promise<() => Promise<void>>;
  /** Drop every listener and give the subscription back. Idempotent; a later `listen()` reopens. */
  close(): Promise<void>;
  /** How many failed attempts in a row so far (0 while a subscription holds). */
  readonly failures: number;
}

/** The defaults every wakeup shares. */
export const RECONNECT_DEFAULTS = { maxFailures: 5, baseDelayMs: 250, maxDelayMs: 15_000 } as const;

/**
 * Check a wakeup's `maxFailures` option, naming the wakeup.
 * @throws ConfigurationError unless it is an integer ≥ 1.
 */
export function checkMaxFailures(who: string, maxFailures: unknown): number {
  if (maxFailures === undefined) return RECONNECT_DEFAULTS.maxFailures;
  if (!Number.isInteger(maxFailures) || (maxFailures as number) < 1)
    throw new ConfigurationError(
      `${who}({ maxFailures }) must be an integer ≥ 1 (got ${String(maxFailures)})`,
    );
  return maxFailures as number;
}

/** One attempt at a subscription, and what became of it. */
interface Attempt<L> {
  link?: L;
  /** `lost` was called: the subscription broke (maybe before `connect` resolved). */
  lost: boolean;
  /** The loop no longer wants this attempt (closed, or replaced). */
  dropped: boolean;
}

/** Build the reconnect loop for `spec`; see {@link SubscriptionSpec}. */
export function reconnectingSubscription<L>(spec: SubscriptionSpec<L>): ReconnectingSubscription {
  const maxFailures = spec.maxFailures ?? RECONNECT_DEFAULTS.maxFailures;
  const baseDelayMs = spec.baseDelayMs ?? RECONNECT_DEFAULTS.baseDelayMs;
  const maxDelayMs = spec.maxDelayMs ?? RECONNECT_DEFAULTS.maxDelayMs;
  const scheduler = spec.scheduler ?? realScheduler;
  const listeners = new Set<(topics: readonly string[]) => void>();
  /** The attempt that holds, or is being made; at most one at a time. */
  let current: Attempt<L> | undefined;
  let opening: Promise<void> | undefined;
  let retry: TimerHandle | undefined;
  let failures = 0;
  /** No subscription held for a while: signal everyone once one holds again. */
  let missed = false;
  let closed = false;

  const dispatch = (topics: readonly string[]) => dispatchSignal(listeners, topics, spec.logger());
  const wanted = () => !closed && listeners.size > 0;

  /** Count a failure; retry after the backoff, or give up on the `maxFailures`-th in a row. */
  const fail = (warning: string, error: unknown) => {
    missed = true;
    spec.logger().warn(warning, error === undefined ? undefined : { error: messageOf(error) });
    if (!wanted() || retry) return;
    failures += 1;
    if (failures >= maxFailures) {
      spec
        .logger()
        .error(
          `${spec.what} failed ${failures} time(s) in a row; giving up (maxFailures: ${maxFailures}), relays keep polling`,
        );
      return;
    }
    retry = scheduler.setTimeout(
      () => {
        retry = undefined;
        void open().catch(() => {});
      },
      Math.min(maxDelayMs, baseDelayMs * 2 ** failures),
    );
  };

  const drop = (attempt: Attempt<L>) => {
    attempt.dropped = true;
    if (current === attempt) current = undefined;
    if (attempt.link !== undefined) void spec.disconnect(attempt.link).catch(() => {});
  };

  /** Open a subscription unless one holds or is opening. Rejects only on a ConfigurationError. */
  const open = (): Promise<void> => {
    if (opening) return opening;
    if (current || !wanted()) return Promise.resolve();
    const attempt: Attempt<L> = { lost: false, dropped: false };
    current = attempt;
    opening = (async () => {
      try {
        attempt.link = await spec.connect({
          signal: (topics) => {
            if (current === attempt && !attempt.dropped && wanted()) dispatch(topics);
          },
          lost: (error) => {
            if (attempt.lost) return;
            attempt.lost = true;
            // Still connecting: the attempt fails below, once connect settles.
            if (attempt.link === undefined || attempt.dropped || current !== attempt) return;
            drop(attempt);
            fail(spec.lostWarning, error);
          },
        });
      } catch (error) {
        if (current === attempt) current = undefined;
        attempt.dropped = true;
        if (error instanceof ConfigurationError) throw error;
        fail(spec.failedWarning, error);
        return;
      }
      if (attempt.lost) {
        drop(attempt);
        fail(spec.lostWarning, undefined);
        return;
      }
      // Closed, or the last listener left, while connecting: nobody wants it.
      if (!wanted() || current !== attempt) {
        drop(attempt);
        return;
      }
      failures = 0;
      if (missed) {
        missed = false;
        // Signals sent while no subscription held are gone: have the relays look now.
        dispatch([]);
      }
    })().finally(() => {
      opening = undefined;
    });
    return opening;
  };

  /** Stop the backoff and give the subscription back, unless a listener came meanwhile. */
  const release = async () => {
    retry?.cancel();
    retry = undefined;
    failures = 0;
    missed = false;
    await opening?.catch(() => {});
    // A listen() that came while the subscription was opening keeps it.
    if (wanted()) {
      void open().catch(() => {});
      return;
    }
    const attempt = current;
    current = undefined;
    if (attempt) {
      attempt.dropped = true;
      if (attempt.link !== undefined) await spec.disconnect(attempt.link).catch(() => {});
    }
  };

  return {
    get failures() {
      return failures;
    },
    async listen(onSignal) {
      closed = false;
      // A wrapper per call, so one function listening twice is unsubscribed once per call.
      const listener = (topics: readonly string[]) => onSignal(topics);
      listeners.add(listener);
      try {
        await open();
      } catch (error) {
        listeners.delete(listener);
        throw error;
      }
      return async () => {
        if (!listeners.delete(listener)) return;
        // The last listener gone: give the subscription back (a later listen() reopens).
        if (listeners.size === 0) await release();
      };
    },
    async close() {
      closed = true;
      listeners.clear();
      await release();
    },
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
