import { type DeliveryStatus, zeroCounts } from '../declare/types.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, ClaimToken } from '../storage/store.js';
import { claimLeaseSeconds } from './claim-lease.js';
import { newClaimToken } from './claim-token.js';
import { deliverBatch } from './deliver-batch.js';
import { isTransientDatabaseError } from './transient.js';

/** Options of `outbox.runRelay()`. */
export interface RunRelayOptions {
  /**
   * Names this relay on the rows it claims.
   * @defaultValue `host:pid:random:relay-N`
   */
  readonly workerId?: string;
  /** Stop after this many claims (a test); forever when omitted. */
  readonly passes?: number;
  /**
   * Stop at the first claim that finds nothing owed, instead of waiting for more: what
   * `npx outbox relay --once` runs. Unlike `deliverPending()`, it is a relay in every other
   * respect, so on SQLite it takes (and respects) the single-relay lock.
   * @defaultValue false
   */
  readonly untilIdle?: boolean;
  /**
   * Ask the relay to stop: it finishes the deliveries in hand, hands the rest of its batch
   * back at once, and resolves. The CLI wires it to SIGTERM and SIGINT.
   */
  readonly signal?: AbortSignal;
  /**
   * How many rows one claim takes.
   * @defaultValue `settings.batchSize`
   */
  readonly batchSize?: number;
  /**
   * How many deliveries run at once within the relay (PostgreSQL). On SQLite, which has one
   * writer, handlers run one at a time whatever this says.
   * @defaultValue 10
   */
  readonly concurrency?: number;
  /**
   * SQLite cannot skip locked rows, so two relays there would hand the same rows to two
   * receivers; a second relay is refused while one holds the database's relay lock. This
   * lifts that, for a deployment that knows it runs exactly one relay.
   * @defaultValue false
   */
  readonly allowUnsafeConcurrency?: boolean;
  /**
   * How long an idle relay waits for a wakeup before it polls again, in milliseconds.
   * @defaultValue `settings.pollIntervalMs`
   */
  readonly pollIntervalMs?: number;
  /** The clock claims are read against (tests move it). @defaultValue the outbox's clock */
  readonly now?: () => Date;
  /**
   * How the relay waits (idle, or backing off after a database error); resolves early when
   * `signal` aborts. Tests inject one that returns at once.
   */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** What a relay did, by delivery status, when it returns. */
export type RelayReport = Record<DeliveryStatus, number> & { passes: number; handedBack: number };

/** A signal that never aborts. */
const NEVER = new AbortController().signal;

/** The longest wait after consecutive failed claims, doubling from the poll interval. */
const MAX_ERROR_BACKOFF_MS = 15_000;
let relayCounter = 0;

/** A sleep that ends early when the signal aborts. */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * The relay's loop: claim a batch, deliver it, record it; when nothing is owed, wait for a
 * wakeup or the poll interval. One explicit loop, always releasing what it holds.
 *
 * The relay survives its database: a failed claim is logged and retried after a backoff
 * that doubles from the poll interval up to 15 s, and Sequelize's pool replaces the
 * connections a restart broke.
 */
export async function runRelay(rt: Runtime, options: RunRelayOptions = {}): Promise<RelayReport> {
  const settings = rt.config.settings;
  const batchSize = options.batchSize ?? settings.batchSize;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    throw new ConfigurationError(
      `runRelay({ batchSize }) must be an integer from 1 to 10000 (got ${batchSize})`,
      { path: 'batchSize' },
    );
  }
  const concurrency = options.concurrency ?? 10;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new ConfigurationError(
      `runRelay({ concurrency }) must be an integer ≥ 1 (got ${concurrency})`,
      { path: 'concurrency' },
    );
  }
  if (options.passes !== undefined && (!Number.isInteger(options.passes) || options.passes < 1)) {
    throw new ConfigurationError(
      `runRelay({ passes }) must be an integer ≥ 1 (got ${options.passes})`,
      { path: 'passes' },
    );
  }
  const workerId = options.workerId ?? `${rt.processId}:relay-${++relayCounter}`;
  const pollMs = options.pollIntervalMs ?? settings.pollIntervalMs;
  const now = options.now ?? rt.clock;
  const sleep = options.sleep ?? abortableSleep;
  const leaseSeconds = claimLeaseSeconds(rt.config);
  const leaseMs = leaseSeconds * 1000;

  // A stop signal of our own, so wakeups can cut an idle wait short without stopping.
  const stop = new AbortController();
  const onStop = () => stop.abort();
  options.signal?.addEventListener('abort', onStop, { once: true });
  if (options.signal?.aborted) stop.abort();

  const single = !rt.store.supportsSkipLocked && !options.allowUnsafeConcurrency;
  if (
    single &&
    !(await rt.store.acquireRelayLock(
      workerId,
      rt.clock(),
      new Date(rt.clock().getTime() + leaseMs),
    ))
  ) {
    options.signal?.removeEventListener('abort', onStop);
    throw new ConfigurationError(
      `another relay is running on this ${rt.store.dialect} database, which cannot split work between relays (no SKIP LOCKED); run one relay, or pass allowUnsafeConcurrency: true if you know the other one is gone`,
      { path: 'allowUnsafeConcurrency' },
    );
  }

  // The single-relay lock is leased like a claim, so it is renewed on a timer for the whole
  // life of the relay, not only between batches: a batch (or an idle wait) longer than the
  // lease would otherwise let a second relay start beside this one. A relay that finds the
  // lock taken by another stops, finishing what it holds.
  let lockRenewal: Promise<unknown> = Promise.resolve();
  const lockTimer = single
    ? setInterval(
        () => {
          lockRenewal = lockRenewal.then(async () => {
            if (!stop.signal.aborted && !(await renewSingleRelayLock())) stop.abort();
          });
        },
        Math.max(50, leaseMs / 3),
      )
    : undefined;
  lockTimer?.unref();

  // An idle wait ends early on a wakeup or a stop: one controller per wait, aborted by
  // either (cheaper than AbortSignal.any per wait, which piles up signals for the GC).
  let idle: AbortController | undefined;
  let woken = false;
  const wakeWaiters: (() => void)[] = [];
  const interruptIdle = () => {
    idle?.abort();
    for (const resolve of wakeWaiters.splice(0)) resolve();
  };
  /** Wait until a batch in hand finishes, or a wakeup (or a stop) arrives. */
  const untilBatchOrWake = async (): Promise<void> => {
    let resolveWake!: () => void;
    const wake = new Promise<void>((resolve) => {
      resolveWake = resolve;
    });
    wakeWaiters.push(resolveWake);
    try {
      await Promise.race([...inFlight, wake]);
    } finally {
      const at = wakeWaiters.indexOf(resolveWake);
      if (at >= 0) wakeWaiters.splice(at, 1);
    }
  };
  // PostgreSQL: while a batch is delivered, a wakeup starts the next claim at once instead
  // of queueing behind the batch (a new event's latency is then not the rest of the batch
  // in hand). The claim's ordering check holds back a key with an event in flight, so two
  // batches never hold one key's events. SQLite has one writer: one batch at a time.
  const maxInFlight = rt.store.supportsSkipLocked ? 2 : 1;
  const inFlight = new Set<Promise<void>>();
  stop.signal.addEventListener('abort', interruptIdle, { once: true });
  let unsubscribe: (() => Promise<void>) | undefined;

  const report: RelayReport = { ...zeroCounts(), passes: 0, handedBack: 0 };

  /** Deliver one claimed batch and add its outcomes to the report; never throws. */
  async function runBatch(rows: ClaimedDelivery[], token: ClaimToken): Promise<void> {
    let batch: Awaited<ReturnType<typeof deliverBatch>>;
    try {
      batch = await deliverBatch(rt, rows, token, {
        concurrency,
        signal: stop.signal,
        leaseSeconds,
        // Record retries wait on the relay's sleep, but are not cut short by a stop:
        // the record is written even when the relay is stopping.
        sleep: (ms) => sleep(ms, NEVER),
      });
    } catch (error) {
      // A fault of our own (a receiver's failure is an outcome, never a throw). The loop
      // goes on; whatever the batch left claimed is handed back at once rather than
      // when its lease lapses (the compare-and-set leaves settled rows alone).
      rt.logger.error('delivering a batch failed; its unsettled rows are handed back', {
        error: (error as Error)?.message ?? String(error),
      });
      await rt.store
        .release(
          rows.map((r) => r.id),
          token,
          rt.clock(),
        )
        .catch(() => {});
      await sleep(errorBackoffMs, stop.signal);
      errorBackoffMs = Math.min(errorBackoffMs * 2, MAX_ERROR_BACKOFF_MS);
      return;
    }
    for (const [status, n] of Object.entries(batch.counts))
      report[status as DeliveryStatus] += n ?? 0;
    report.handedBack += batch.handedBack;
  }

  let errorBackoffMs = pollMs;
  try {
    // Inside the try: a wakeup that cannot listen must not leave the lock held.
    unsubscribe = rt.wakeup
      ? await rt.wakeup.listen(() => {
          woken = true;
          interruptIdle();
        })
      : undefined;
    while (
      !stop.signal.aborted &&
      (options.passes === undefined || report.passes < options.passes)
    ) {
      report.passes += 1;
      woken = false;
      if (single && !(await renewSingleRelayLock())) break;
      const token = newClaimToken(workerId, rt.clock);
      const at = now();
      let rows: Awaited<ReturnType<typeof rt.store.claim>>;
      try {
        rows = await rt.store.claim({
          token,
          now: at,
          leaseUntil: new Date(at.getTime() + leaseMs),
          limit: batchSize,
        });
        errorBackoffMs = pollMs;
      } catch (error) {
        const transient = isTransientDatabaseError(error);
        rt.logger[transient ? 'warn' : 'error'](`claim failed; retrying in ${errorBackoffMs} ms`, {
          error: (error as Error).message,
        });
        rt.events.emit('relay:error', { error, during: 'claim' });
        await sleep(errorBackoffMs, stop.signal);
        errorBackoffMs = Math.min(errorBackoffMs * 2, MAX_ERROR_BACKOFF_MS);
        continue;
      }
      if (rows.length === 0) {
        if (inFlight.size > 0) {
          // Not idle while a batch is in hand: wait for it (or a wakeup), then claim again.
          if (!woken) await untilBatchOrWake();
          continue;
        }
        if (options.untilIdle) break;
        if (options.passes !== undefined && report.passes >= options.passes) break;
        if (!woken && !stop.signal.aborted) {
          idle = new AbortController();
          await sleep(pollMs, idle.signal);
          idle = undefined;
        }
        continue;
      }
      const running: Promise<void> = runBatch(rows, token).finally(() => inFlight.delete(running));
      inFlight.add(running);
      // Claim again when a batch slot is free and there is reason to: the batch finished
      // (a backlog drains batch after batch) or a wakeup said something new was written.
      if (inFlight.size >= maxInFlight) await Promise.race(inFlight);
      else if (!woken) await untilBatchOrWake();
    }
  } finally {
    // Every batch in hand finishes (a stop hands its unstarted rows back) before the
    // relay lets go of its wakeup and its lock.
    await Promise.allSettled([...inFlight]);
    clearInterval(lockTimer);
    await lockRenewal.catch(() => {});
    options.signal?.removeEventListener('abort', onStop);
    stop.signal.removeEventListener('abort', interruptIdle);
    await unsubscribe?.().catch((error) =>
      rt.logger.warn('could not stop listening for wakeups', { error }),
    );
    if (single) await rt.store.releaseRelayLock(workerId).catch(() => {});
  }
  return report;

  async function renewSingleRelayLock(): Promise<boolean> {
    try {
      if (
        await rt.store.acquireRelayLock(
          workerId,
          rt.clock(),
          new Date(rt.clock().getTime() + leaseMs),
        )
      )
        return true;
      rt.logger.error(`relay ${workerId} lost the single-relay lock to another relay; stopping`);
      return false;
    } catch (error) {
      rt.events.emit('relay:error', { error, during: 'claim' });
      return true; // a database error: the claim below will fail and back off
    }
  }
}
