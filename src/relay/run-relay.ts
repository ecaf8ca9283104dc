import { DEFAULT_LANE } from '../declare/define-outbox.js';
import { type DeliveryStatus, zeroCounts } from '../declare/types.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import { ClaimFailureLog } from '../observe/claim-failures.js';
import { interruptibleSleep, type Runtime, realScheduler } from '../runtime.js';
import type { WakeupConnection } from '../wakeups/wakeup.js';
import { type Claim, claimBatch } from './claim.js';
import { deliverBatch } from './deliver-batch.js';
import { IdleSweep, monotonicMs } from './idle-prune.js';
import { type LaneControl, LanePauses, lanesNotSetAside, servedLanes } from './lanes.js';
import { SchemaRound, servedSchemas, sweepsOf } from './relay-schemas.js';
import { type HeldBatch, RelayState } from './relay-state.js';
import { checkTopics, servesTopic } from './relay-topics.js';
import { SingleRelayLock } from './single-relay-lock.js';
import { DEFAULT_SUMMARY_INTERVAL_MS, RelaySummary } from './summary.js';
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
   * respect, so on SQLite it takes (and respects) the single-relay lock. A lane paused by a
   * deferral claims nothing, so a run that meets one ends at its next empty pass; the rows
   * it handed back are owed to the next run.
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
   * receivers; a second relay is refused while one holds the database's relay lock (a
   * lease of 15 s, renewed every 5 s, so a relay killed with -9 holds it back at most that
   * long). This lifts that, for a deployment that knows it runs exactly one relay.
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
   * How long, in milliseconds, claims may keep failing with a database error that is NOT
   * transient before the relay gives up and rejects with it. Transient errors (the
   * database down or restarting, a lost connection: the retry table in transient.ts) are
   * retried for as long as they last, since an outage ends; a missing table, a permission
   * denied or a broken statement does not end by itself, and a relay retrying it for ever
   * looks alive while delivering nothing. The budget still lets a deploy that migrates
   * beside a starting relay win its race. Measured on the outbox's clock from the first
   * failure of a run of them; a claim that succeeds resets it.
   * @defaultValue 60000
   */
  readonly maxNonTransientErrorMs?: number;
  /**
   * The lane this relay serves: only the rows of receivers declared with that `lane`, read
   * from the config on every claim. The default lane (`'default'`) is every row no named
   * lane takes — including rows of a receiver since deleted, which it records `orphaned` —
   * and it is what a relay serves unless told otherwise: the default relay staying out of
   * a slow lane is the whole of the isolation. `null` serves every lane (a single relay in
   * development). A lane no receiver declares is refused at start (a ConfigurationError
   * naming it and `config.lanes`), because a relay serving it would claim nothing and look
   * healthy doing it.
   *
   * Each claim is leased for the lane's receivers: their shared `leaseSeconds` plus 10
   * percent where they all declare one no longer than `settings.leaseSeconds`, else
   * `settings.leaseSeconds` plus 10 percent — so a slow lane wants a `batchSize` it can
   * work through inside that lease.
   * @defaultValue `'default'`
   */
  readonly lane?: string | null;
  /**
   * Lanes to leave out (with `lane: null`, every lane but these): each lane's own
   * condition negated, so it covers available rows and lapsed claims alike. Excluding the
   * default lane leaves only the named ones. Each must be a declared lane.
   */
  readonly excludeLanes?: readonly string[];
  /**
   * Serve only these topics' events — claimed, delivered and counted only for them — so
   * relays of different topics share one table: topic names, and prefix patterns ending
   * in one `*` (`'library.*'`), whose `_` and `%` are plain characters (a `*` or `?`
   * elsewhere is refused). A wakeup naming topics wakes the relay only when one is its.
   * @defaultValue every topic
   */
  readonly topics?: readonly string[];
  /** Leave these topics' events to other relays (names and prefix patterns, as `topics`). */
  readonly excludeTopics?: readonly string[];
  /**
   * Serve only these tenants' events (`settings.tenancy: 'column'`), as `topics` narrows
   * by topic: a large tenant's relays beside everyone else's. An event without a tenant is
   * served only by relays without this option. Refused by an outbox without tenancy.
   * @defaultValue every tenant, and events without one
   */
  readonly tenants?: readonly string[];
  /** Leave these tenants' events to other relays (events without a tenant are served). */
  readonly excludeTenants?: readonly string[];
  /**
   * Serve the outboxes of these schemas (a schema per tenant, `settings.tenancy:
   * 'schema'`; PostgreSQL), all from this one relay: its claims go round them in turn, a
   * batch from each and passing over those with nothing owed, so a tenant's backlog never
   * starves another tenant, and the relay idles only once none has anything owed. Under
   * schema tenancy, `tenants` names the schemas by their tenants instead. Refused on a
   * database without schemas (SQLite, MariaDB: keep tenants in the tenant column there).
   * Each schema's claim is one of `passes`, and `untilIdle` stops at the first whole round
   * that found nothing.
   * @defaultValue the outbox's own schema alone (required under schema tenancy, as `tenants` or this)
   */
  readonly schemas?: readonly string[];
  /**
   * How the relay waits (idle, or backing off after a database error); resolves early when
   * `signal` aborts. @defaultValue the outbox's scheduler (`createOutbox({ scheduler })`)
   */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /**
   * The idle sweep's clock, in milliseconds (see `settings.relayPrune`): apart from `now`,
   * which is a wall clock a test sets to anything for the claim, and which an NTP step
   * moves. Tests inject one to reach the sweep's interval without waiting for it.
   * @defaultValue `performance.now()`
   */
  readonly monotonic?: () => number;
  /**
   * Every this many milliseconds the relay logs one line at info: what it delivered,
   * failed, dead-lettered (and orphaned, handed back) since its last line, and how many
   * deliveries are owed now (src/relay/summary.ts). `0`: no summary. Timed on the outbox's
   * scheduler, so a test with a fake one reaches a line without waiting.
   * @defaultValue 60000
   */
  readonly summaryIntervalMs?: number;
}

/** What a relay did, by delivery status, when it returns. */
export type RelayReport = Record<DeliveryStatus, number> & { passes: number; handedBack: number };

/** A signal that never aborts. */
const NEVER = new AbortController().signal;

/** How long non-transient claim errors are retried before the relay gives up. */
const DEFAULT_MAX_NON_TRANSIENT_MS = 60_000;

/** The longest wait after consecutive failed claims, doubling from the poll interval. */
const MAX_ERROR_BACKOFF_MS = 15_000;

/**
 * The relay's loop: claim a batch, deliver it, record it; when nothing is owed, wait for a
 * wakeup or the poll interval. One explicit loop, always releasing what it holds.
 *
 * The relay survives its database: a failed claim is retried after a backoff that doubles
 * from the poll interval up to 15 s, and Sequelize's pool replaces the connections a
 * restart broke. An outage is logged once, not once per retry ({@link ClaimFailureLog});
 * `relay:error` still fires for every failed claim.
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
  const lanes = servedLanes(
    rt.config,
    'runRelay',
    options.lane,
    options.excludeLanes,
    DEFAULT_LANE,
  );
  const topics = checkTopics('runRelay', 'topics', options.topics);
  const excludeTopics = checkTopics('runRelay', 'excludeTopics', options.excludeTopics);
  // The schemas served (the outbox's own alone, unless given), visited in turn.
  const { targets, tenants, excludeTenants } = servedSchemas(rt, 'runRelay', options);
  const round = new SchemaRound(targets);
  if (
    options.maxNonTransientErrorMs !== undefined &&
    (typeof options.maxNonTransientErrorMs !== 'number' || !(options.maxNonTransientErrorMs >= 0))
  ) {
    throw new ConfigurationError(
      `runRelay({ maxNonTransientErrorMs }) must be a number of milliseconds ≥ 0 (got ${options.maxNonTransientErrorMs})`,
      { path: 'maxNonTransientErrorMs' },
    );
  }
  const summaryIntervalMs = options.summaryIntervalMs ?? DEFAULT_SUMMARY_INTERVAL_MS;
  if (!Number.isInteger(summaryIntervalMs) || summaryIntervalMs < 0) {
    throw new ConfigurationError(
      `runRelay({ summaryIntervalMs }) must be an integer number of milliseconds ≥ 0, 0 for none (got ${summaryIntervalMs})`,
      { path: 'summaryIntervalMs' },
    );
  }
  const workerId = options.workerId ?? `${rt.processId}:relay-${++rt.state.relays}`;
  const pollMs = options.pollIntervalMs ?? settings.pollIntervalMs;
  const now = options.now ?? rt.clock;
  const sleep = options.sleep ?? ((ms, signal) => rt.scheduler.sleep(ms, signal));

  // A stop signal of our own, so wakeups can cut an idle wait short without stopping.
  const stop = new AbortController();
  const onStop = () => stop.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onStop, { once: true });
  if (options.signal?.aborted) stop.abort(options.signal.reason);

  // A single-writer database's lock, one per schema served (none splits its queue and
  // has schemas today, but the lock is the store's, so it is taken wherever one exists).
  const locks: SingleRelayLock[] = [];
  try {
    for (const target of targets) {
      const lockRole = options.allowUnsafeConcurrency ? undefined : target.store.relayLock;
      if (lockRole)
        locks.push(await SingleRelayLock.take(target, lockRole, workerId, () => stop.abort()));
    }
  } catch (error) {
    options.signal?.removeEventListener('abort', onStop);
    for (const held of locks) await held.release();
    throw error;
  }

  // PostgreSQL: while a batch is delivered, a wakeup starts the next claim at once instead
  // of queueing behind it (a new event's latency is then not the rest of the batch in
  // hand), and so does a claim that came back full (a backlog: the next claim runs in the
  // database while this batch runs here). Two batches run their attempts at once, and a
  // third may be claimed while one of them only waits for its record, so a transport's
  // send (Redis, a broker) is not followed by its record before the next claim may start
  // (bench/README.md, "The record's slot"). The claim's ordering check holds back a key
  // with an event in flight (claimed and not yet recorded, in any batch), so two batches
  // never hold one key's events. A single-writer database: one batch at a time.
  const state = new RelayState({
    sleep,
    // On the real scheduler, the idle wait a wakeup ends costs no AbortController.
    interruptibleSleep:
      options.sleep === undefined && rt.scheduler === realScheduler
        ? interruptibleSleep
        : undefined,
    stop: stop.signal,
    maxInFlight: rt.store.capabilities.splitsQueue ? 2 : 1,
    maxRecording: rt.store.capabilities.splitsQueue ? 1 : 0,
  });
  const report: RelayReport = { ...zeroCounts(), passes: 0, handedBack: 0 };
  // One line at info every summaryIntervalMs: what the relay did since its last one.
  const summary = RelaySummary.start(rt, workerId, summaryIntervalMs, report, targets);
  // The idle sweep (one per schema): the first an interval from now, on the monotonic clock.
  const sweep = sweepsOf(
    targets.map((target) => IdleSweep.start(target, options.monotonic ?? monotonicMs)),
  );
  // A deferral pauses its lane in this relay for the seconds it asked, on `now`: the
  // lane's unstarted rows are handed back, and claims leave it out until the pause ends.
  const pauses = new LanePauses();
  const lanesControl: LaneControl = {
    // Asked once per task: no clock read while no lane is paused (the common case).
    setAside: (lane) => pauses.any && pauses.isPaused(lane, now().getTime()),
    defer: (lane, seconds) => {
      pauses.pause(lane, now().getTime() + seconds * 1000);
      rt.logger.info(
        `lane ${lane} paused for ${seconds}s in relay ${workerId}: a receiver deferred (RetryAfter, counts: false); its unstarted rows are handed back`,
      );
    },
  };
  /** The lanes the next claim takes: those served, less the paused ones. */
  const claimLanes = (at: Date): readonly string[] | undefined =>
    lanesNotSetAside(rt.config, lanes, pauses.active(at.getTime()));
  let errorBackoffMs = pollMs;
  const maxNonTransientMs = options.maxNonTransientErrorMs ?? DEFAULT_MAX_NON_TRANSIENT_MS;
  /**
   * When the current run of non-transient claim failures began (outbox clock, ms), per
   * schema served: a schema whose claims keep failing (not migrated) gives the relay up
   * even while the other schemas' claims succeed.
   */
  const nonTransientSince = new Map<Runtime, number>();
  // An outage is logged once (and once more when it ends), not once per failed claim.
  const claimFailures = new ClaimFailureLog(rt.logger, rt.clock);
  const backOff = async () => {
    await sleep(errorBackoffMs, stop.signal);
    errorBackoffMs = Math.min(errorBackoffMs * 2, MAX_ERROR_BACKOFF_MS);
  };

  /** Deliver one claimed batch and add its outcomes to the report; never throws. */
  async function runBatch(target: Runtime, claim: Claim, held: HeldBatch): Promise<void> {
    try {
      const batch = await deliverBatch(target, claim.rows, claim.token, {
        onAttemptsEnded: held.attemptsEnded,
        concurrency,
        signal: stop.signal,
        leaseSeconds: claim.leaseSeconds,
        leaseUntil: claim.leaseUntil,
        lanes: lanesControl,
        // Record retries wait on the relay's sleep, but are not cut short by a stop:
        // the record is written even when the relay is stopping.
        sleep: (ms) => sleep(ms, NEVER),
      });
      for (const [status, n] of Object.entries(batch.counts))
        report[status as DeliveryStatus] += n ?? 0;
      report.handedBack += batch.handedBack;
    } catch (error) {
      // A fault of our own (a receiver's failure is an outcome, never a throw). The loop
      // goes on; whatever the batch left claimed is handed back at once rather than
      // when its lease lapses (the compare-and-set leaves settled rows alone).
      rt.logger.error('delivering a batch failed; its unsettled rows are handed back', { error });
      await target.store
        .release(
          claim.rows.map((r) => r.id),
          claim.token,
          rt.clock(),
        )
        .catch(() => {});
      await backOff();
    }
  }

  let unsubscribe: (() => Promise<void>) | undefined;
  try {
    // Inside the try: a wakeup that cannot listen must not leave the lock held.
    // A relay of some topics is woken only by a signal naming one of its topics (or none).
    const onSignal =
      topics === undefined && excludeTopics === undefined
        ? state.wake
        : (signalled: readonly string[]) => {
            if (
              signalled.length === 0 ||
              signalled.some((t) => servesTopic(topics, excludeTopics, t))
            )
              state.wake();
          };
    unsubscribe = await rt.wakeup?.listen(onSignal, {
      connection: connectionOf(rt),
      logger: rt.logger,
    });
    while (
      !stop.signal.aborted &&
      (options.passes === undefined || report.passes < options.passes)
    ) {
      report.passes += 1;
      // Mid-round (the schemas claimed since the last rows found none), a wakeup is kept:
      // the round's end then claims again at once instead of idling through it.
      if (!round.midRound) state.woken = false;
      if (!(await renewAll(locks))) break;
      const target = round.take();
      let claim: Claim;
      try {
        const at = now();
        claim = await claimBatch(target, {
          workerId,
          now: at,
          limit: batchSize,
          lanes: claimLanes(at),
          topics,
          excludeTopics,
          tenants,
          excludeTenants,
        });
        errorBackoffMs = pollMs;
        nonTransientSince.delete(target);
        claimFailures.succeeded();
      } catch (error) {
        const transient = isTransientDatabaseError(error);
        claimFailures.failed(error, errorBackoffMs, transient);
        rt.events.emit('relay:error', { error, during: 'claim' });
        if (transient) nonTransientSince.delete(target);
        else {
          const at = rt.clock().getTime();
          const since = nonTransientSince.get(target) ?? at;
          nonTransientSince.set(target, since);
          if (at - since >= maxNonTransientMs) {
            const of = target.schema === undefined ? '' : ` of the schema ${target.schema}`;
            rt.logger.error(
              `the relay gives up: its claims${of} failed for ${Math.round((at - since) / 1000)} s with an error that is not transient (a missing table means: run \`npx outbox migrate${target.schema === undefined ? '' : ` --schemas ${target.schema}`}\`)`,
              { error },
            );
            throw error;
          }
        }
        await backOff();
        continue;
      }
      // An empty claim short of a whole empty round: the next schema's turn, at once.
      if (round.claimed(claim.rows.length)) continue;
      if (claim.rows.length > 0) {
        state.add((held) => runBatch(target, claim, held));
        // A sweep that yielded goes on beside the work (the batch is under way), a batch or
        // a poll interval at a time, so a busy relay's history is still pruned.
        if (sweep?.unfinished) await sweep.maybe(stop.signal, () => state.woken, pollMs);
        await state.afterClaim(claim.rows.length >= batchSize);
      } else if (state.inFlight > 0) {
        // Not idle while a batch is in hand: wait for it (or a wakeup), then claim again.
        await state.whileBusy();
      } else {
        // Idle: prune, at most once per settings.relayPruneSeconds; a sweep yields to work.
        await sweep?.maybe(stop.signal, () => state.woken, pollMs);
        if (sweep?.unfinished) continue; // claim, then go on with the sweep
        if (options.untilIdle) break;
        if (options.passes !== undefined && report.passes >= options.passes) break;
        await state.idle(pollMs);
      }
    }
  } finally {
    // Every batch in hand finishes (a stop hands its unstarted rows back) before the
    // relay lets go of its wakeup and its lock.
    await state.drain();
    state.dispose();
    await summary?.stop();
    options.signal?.removeEventListener('abort', onStop);
    await unsubscribe?.().catch((error) =>
      rt.logger.warn('could not stop listening for wakeups', { error }),
    );
    for (const held of locks) await held.release();
  }
  return report;
}

/** Renew every single-relay lock held (before a claim); false once one was lost. */
async function renewAll(locks: readonly SingleRelayLock[]): Promise<boolean> {
  for (const lock of locks) if (!(await lock.renew())) return false;
  return true;
}

/** The outbox database's connection settings, for a wakeup that opens its own listener. */
function connectionOf(rt: Runtime): WakeupConnection {
  const c = rt.sequelize.config;
  return {
    dialect: rt.sequelize.getDialect(),
    host: c.host,
    port: Number(c.port) || undefined,
    user: c.username,
    password: c.password ?? undefined,
    database: c.database,
  };
}

/** A sleep that ends early when the signal aborts (the real scheduler's). */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return realScheduler.sleep(ms, signal);
}
