import type { DeliveryItem } from '../declare/types.js';
import { ConfigurationError, DeliveryError, type DeliveryTimeout } from '../errors/outbox-error.js';
import type { NotYet, RetryAfter } from '../errors/signals.js';
import type { OutboxLogger } from './logger.js';

/**
 * What one delivery of an attempt came to, as an `aroundDelivery` hook sees it once
 * `next()` resolves. Every failure carries the error the relay records in `last_error`.
 *
 * - `succeeded`: the receiver took it (a handler's work committed with its acknowledgement).
 * - `failed`: the receiver threw (or a batch item failed); `deadLettered` when this was the
 *   last attempt of its budget or a `PermanentFailure`.
 * - `timedOut`: the attempt outran its time limit (a {@link DeliveryTimeout}); counted as a
 *   failure like any other.
 * - `retryAfter`: the destination asked to be tried again later ({@link RetryAfter}).
 * - `notYet`: the receiver answered {@link NotYet}: the row moves to its time, no attempt
 *   spent, not a failure.
 * - `handedBack`: no attempt spent: the database failed under a handler, or the receiver
 *   gave up because the relay is stopping. The row is claimable again at once.
 * - `lost`: the claim lapsed and another worker took the row before this one could record
 *   its verdict; a handler's work was rolled back.
 *
 * For a transport, the verdict is recorded with the rest of its batch after the hooks have
 * returned, so a `lost` claim at that write is not seen here (it is logged by the relay).
 */
export type DeliveryOutcome =
  | { readonly status: 'succeeded' }
  | { readonly status: 'failed'; readonly error: unknown; readonly deadLettered: boolean }
  | {
      readonly status: 'timedOut';
      readonly error: DeliveryTimeout;
      readonly deadLettered: boolean;
    }
  | { readonly status: 'retryAfter'; readonly error: RetryAfter; readonly deadLettered: boolean }
  | { readonly status: 'notYet'; readonly error: NotYet }
  | { readonly status: 'handedBack'; readonly error: unknown }
  | { readonly status: 'lost' };

/**
 * One durable attempt, as an `aroundDelivery` hook is handed it: the receiver's key (what a
 * span, a metric or a log line is labelled by, since the hook is handed this and not the
 * receiver) and the deliveries the attempt carries, each the event and its
 * {@link DeliveryContext} (delivery id, attempt number, target, due time).
 *
 * `items` holds ONE delivery for a handler and for a transport's `deliver`, and every item of
 * one `deliverBatch` call for a batching transport: the hook wraps the call the relay makes,
 * and a batch is one call with one signal, one time limit and one outcome per item. Calling
 * a hook per item of a batch would nest N hooks around one call, or run N hooks whose one
 * shared `next()` starts a send none of them alone controls.
 *
 * The contexts are frozen data read off the rows. A handler's context here has no
 * `transaction`: the hook runs around the transaction (see {@link AroundDelivery}).
 */
export interface DeliveryAttempt {
  /** The key of the receiver this attempt is for. */
  readonly receiverKey: string;
  /** `handler` (runs in a transaction with its acknowledgement) or `transport` (sends). */
  readonly receiverKind: 'handler' | 'transport';
  /** Whether this is one `deliverBatch` call (then `items` may hold more than one). */
  readonly batched: boolean;
  /** The deliveries of this attempt, in the order the receiver gets them. */
  readonly items: readonly DeliveryItem[];
}

/**
 * A hook around each durable attempt (the reference's AROUND_DELIVERY): for tracing,
 * metrics, logging. Declared at `createOutbox(config, { sequelize, aroundDelivery })`: a
 * function is runtime wiring, not config data, and the config file stays plain data codegen
 * can read.
 *
 * Called once per attempt at every site a durable receiver runs (the relay, `deliverPending`,
 * `deliverOne`, `drainOutbox`): per handler delivery, per `deliver` call, and once per
 * `deliverBatch` call with all its items. `next()` runs the attempt and resolves with one
 * {@link DeliveryOutcome} per item, failures included: it NEVER REJECTS, so
 * `const outcomes = await next()` sees every attempt without a `try`. The attempt runs in the
 * async context the hook calls `next()` in, so an OpenTelemetry span made active around
 * `next()` is the parent of whatever the receiver does.
 *
 * A hook observes; it cannot change what is recorded, and it cannot lose a delivery:
 *
 * - the verdict recorded is the attempt's own, whatever the hook returns or throws after
 *   `next()` (a throw then is logged as a warning);
 * - a hook that throws before calling `next()`, or returns without calling it, fails the
 *   attempt with its error (an ordinary failed attempt: backoff, attempts counted, dead
 *   letter when the budget is spent — so a broken hook shows as failing deliveries, never as
 *   silently missing ones), logged as an error naming the receiver;
 * - the hook runs inside the attempt's time limit: one that neither calls `next()` nor
 *   returns within it fails the attempt the same way, and one still running when the limit
 *   ends after the attempt finished is no longer waited for;
 * - calling `next()` twice runs the attempt once (both calls resolve with its outcomes).
 *
 * For a handler the hook wraps the whole transaction (BEGIN, the handler, the
 * acknowledgement, COMMIT) rather than running inside it: its outcome is then what really
 * committed (a commit that fails is `handedBack`, not `succeeded`), and the hook's own time
 * (exporting a span, a slow metrics client) is never spent holding the transaction's
 * connection and row locks.
 *
 * Several hooks compose, outermost first: `[a, b]` runs `a` around `b` around the attempt.
 */
export type AroundDelivery = (
  attempt: DeliveryAttempt,
  next: () => Promise<readonly DeliveryOutcome[]>,
) => unknown;

/**
 * Headers every fired event gets, computed at `fire()`/`fireMany()` in the caller's async
 * context (once per call, before validation): how a trace context (`traceparent`,
 * `tracestate`) or any other ambient value travels with the event to its receivers, which may
 * run in another process hours later. A message's own headers win over these. Return nothing
 * (or an empty object) to add none. A throw is logged and the event is fired without them:
 * telemetry never fails the caller's write.
 */
export type FireHeaders = () => Readonly<Record<string, string>> | undefined;

/** The hooks as `createOutbox` keeps them: `undefined` when none, so the hot path tests one field. */
export function hookList<T>(hooks: T | readonly T[] | undefined, option: string): T[] | undefined {
  if (hooks === undefined) return undefined;
  const list = (Array.isArray(hooks) ? [...hooks] : [hooks]) as unknown[];
  list.forEach((hook, i) => {
    if (typeof hook !== 'function') {
      throw new ConfigurationError(
        `createOutbox({ ${option} }) takes a function or an array of functions; ${Array.isArray(hooks) ? `${option}[${i}] is` : 'got'} ${hook === null ? 'null' : typeof hook}`,
        { path: Array.isArray(hooks) ? `${option}[${i}]` : option },
      );
    }
  });
  return list.length === 0 ? undefined : (list as T[]);
}

/** The headers of every {@link FireHeaders} of an outbox, merged in order; `undefined` for none. */
export function fireHeadersOf(
  sources: readonly FireHeaders[],
  logger: OutboxLogger,
): Record<string, string> | undefined {
  let headers: Record<string, string> | undefined;
  for (const source of sources) {
    let more: Readonly<Record<string, string>> | undefined;
    try {
      more = source();
    } catch (error) {
      logger.warn('a fireHeaders function threw; the event is fired without its headers', {
        error,
      });
      continue;
    }
    if (more && Object.keys(more).length > 0) headers = { ...headers, ...more };
  }
  return headers;
}

/** What the relay hands {@link runAround}: one attempt, how to run it, and what it came to. */
export interface AroundTarget<T> {
  readonly attempt: DeliveryAttempt;
  /** Run the attempt itself (called at most once). */
  run(): Promise<T>;
  /** The outcome of each item, from what `run` resolved to. */
  outcomes(result: T): readonly DeliveryOutcome[];
  /** The attempt's time limit, in milliseconds: bounds the hooks too. */
  readonly limitMs: number;
  /** The runtime's timers (tests move time). */
  readonly setTimeout: (fn: () => void, ms: number) => { cancel(): void };
  readonly logger: OutboxLogger;
}

/** What running an attempt under its hooks came to. */
export type AroundResult<T> =
  | { readonly ran: true; readonly result: T }
  /** No hook reached the attempt: it failed with `error` and the receiver never ran. */
  | { readonly ran: false; readonly error: unknown };

/**
 * Run one attempt under `hooks` (outermost first) — the rules of {@link AroundDelivery}: the
 * attempt's own result is what is returned, whatever the hooks do; a hook that never reaches
 * `next()` fails the attempt with its error.
 */
export async function runAround<T>(
  hooks: readonly AroundDelivery[],
  target: AroundTarget<T>,
): Promise<AroundResult<T>> {
  const { attempt, logger } = target;
  let running: Promise<T> | undefined;
  /** Set once the attempt is settled as failed by a hook: a late `next()` runs nothing. */
  let failure: { error: unknown } | undefined;
  const failedOutcomes = (error: unknown): DeliveryOutcome[] =>
    attempt.items.map(() => ({ status: 'failed', error, deadLettered: false }));

  const innermost = (): Promise<readonly DeliveryOutcome[]> => {
    if (failure) return Promise.resolve(failedOutcomes(failure.error));
    running ??= target.run();
    // Never rejects: a fault of the relay's own (not a receiver's failure) still reaches the
    // hooks as an outcome, and the relay sees the rejection through `running`.
    return running.then(
      (result) => target.outcomes(result),
      (error: unknown) => failedOutcomes(error),
    );
  };

  const level = (i: number): Promise<readonly DeliveryOutcome[]> => {
    if (i === hooks.length) return innermost();
    return callHook(i);
  };

  const callHook = async (i: number): Promise<readonly DeliveryOutcome[]> => {
    let inner: Promise<readonly DeliveryOutcome[]> | undefined;
    const next = () => {
      inner ??= level(i + 1);
      return inner;
    };
    let threw = false;
    let thrown: unknown;
    try {
      await hooks[i](attempt, next);
    } catch (error) {
      threw = true;
      thrown = error;
    }
    if (inner) {
      if (threw) {
        logger.warn(
          `an aroundDelivery hook of receiver ${attempt.receiverKey} threw after next(); the attempt's own outcome is recorded`,
          { error: thrown, deliveryIds: deliveryIds(attempt) },
        );
      }
      return inner;
    }
    const error = threw
      ? thrown
      : new DeliveryError(
          `the aroundDelivery hook ${i} of receiver ${attempt.receiverKey} returned without calling next(); the attempt counts as failed`,
          {
            deliveryId: attempt.items[0]?.context.deliveryId ?? '',
            receiverKey: attempt.receiverKey,
          },
        );
    failure ??= { error };
    logger.error(
      `an aroundDelivery hook of receiver ${attempt.receiverKey} ${threw ? 'threw before calling next()' : 'did not call next()'}; the attempt counts as failed`,
      { error, deliveryIds: deliveryIds(attempt) },
    );
    return failedOutcomes(failure.error);
  };

  let timer: { cancel(): void } | undefined;
  const outOfTime = new Promise<'limit'>((resolve) => {
    timer = target.setTimeout(() => resolve('limit'), target.limitMs);
  });
  try {
    const settled = await Promise.race([level(0).then(() => 'hooks' as const), outOfTime]);
    if (settled === 'limit') {
      if (running) {
        logger.warn(
          `an aroundDelivery hook of receiver ${attempt.receiverKey} had not returned when the attempt's time limit ran out; the attempt's own outcome is recorded`,
          { deliveryIds: deliveryIds(attempt) },
        );
      } else {
        const error = new DeliveryError(
          `the aroundDelivery hooks of receiver ${attempt.receiverKey} neither called next() nor returned within the attempt's time limit (${target.limitMs / 1000}s); the attempt counts as failed`,
          {
            deliveryId: attempt.items[0]?.context.deliveryId ?? '',
            receiverKey: attempt.receiverKey,
          },
        );
        failure ??= { error };
        logger.error(error.message, { deliveryIds: deliveryIds(attempt) });
      }
    }
  } finally {
    timer?.cancel();
  }
  // The attempt's own result, whatever the hooks did: recorded even when a hook lied.
  if (running) return { ran: true, result: await running };
  return { ran: false, error: failure?.error };
}

function deliveryIds(attempt: DeliveryAttempt): (string | null)[] {
  return attempt.items.map((item) => item.context.deliveryId);
}
