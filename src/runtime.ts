import type { Sequelize, Transaction } from 'sequelize';
import type { OutboxConfig } from './declare/define-outbox.js';
import type { FiredEvent, PlannedEvent } from './fire/types.js';
import type { AroundDelivery, FireHeaders } from './observe/around-delivery.js';
import type { SafeEmitter } from './observe/events.js';
import type { OutboxLogger } from './observe/logger.js';
import type { LaneClaim } from './relay/lanes.js';
import type { DialectEntry } from './storage/dialect-entry.js';
import type { OutboxStore } from './storage/store.js';
import type { TableNames } from './storage/tables.js';
import type { TaskBackend } from './tasks/task-backend.js';
import type { OutboxWakeup } from './wakeups/wakeup.js';

/** A timer the {@link Scheduler} started; pass it back to cancel it. */
export interface TimerHandle {
  /** Stop the timer; its callback never runs. Idempotent. */
  readonly cancel: () => void;
}

/**
 * Every timer the outbox starts goes through one of these, beside the clock, so a test can
 * move time instead of sleeping through it: the lease keeper's renewals, an attempt's
 * timeout, the relay's idle wait and its backoffs after a database error.
 *
 * The default ({@link realScheduler}) is Node's timers, unref'd so an idle outbox never
 * keeps a process alive.
 */
export interface Scheduler {
  /** Run `fn` once after `ms` milliseconds. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Resolve after `ms` milliseconds, or at once when `signal` aborts (never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** A Node timer as a {@link TimerHandle} (a class: no closure per timer on the hot path). */
class NodeTimer implements TimerHandle {
  readonly #timer: NodeJS.Timeout;
  constructor(timer: NodeJS.Timeout) {
    this.#timer = timer;
  }
  cancel(): void {
    clearTimeout(this.#timer);
  }
}

/** Node's own timers, unref'd. */
export const realScheduler: Scheduler = {
  setTimeout(fn, ms) {
    return new NodeTimer(setTimeout(fn, ms).unref());
  },
  sleep(ms, signal) {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    });
  },
};

/** A wait of {@link interruptibleSleep}: `done` resolves when it ends, on time or interrupted. */
export interface InterruptibleSleep {
  readonly done: Promise<void>;
  /** End the wait now (its timer goes); a no-op once it has ended. */
  interrupt(): void;
}

/**
 * The real scheduler's sleep, ended early by a call rather than an `AbortSignal`. An idle
 * relay is woken this way once per event at a low rate, and an `AbortController`'s
 * `abort()` costs 14-36 µs there (its event dispatch, and the `DOMException` it makes for a
 * reason), against 3-4 µs for a cleared timer and a resolved promise (measured in bench/,
 * issue 7): time between a commit and its handler's start. Its timer keeps the process
 * alive, as `realScheduler.sleep`'s does.
 */
export function interruptibleSleep(ms: number): InterruptibleSleep {
  let interrupt!: () => void;
  const done = new Promise<void>((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      if (timer !== undefined) clearTimeout(timer);
      resolve();
    };
    interrupt = end;
    timer = setTimeout(end, ms);
  });
  return { done, interrupt };
}

/**
 * The NOTIFY throttle as fire() uses it (`NotifyCoalescer`, wakeups/notify-coalescing.ts,
 * implements it; declared here so the runtime's type needs nothing of wakeups/).
 */
export interface NotifyGate {
  /** Whether the write about to be made may carry its NOTIFY (the first of an interval). */
  admit(): boolean;
  /** A write that carried none has committed: announce its topics with the trailing NOTIFY. */
  fold(topics: readonly string[]): void;
  /** Send the trailing NOTIFY now, and wait for it. */
  close(): Promise<void>;
}

/**
 * The schemas of an outbox with `settings.tenancy: 'schema'` (storage/tenant-schemas.ts
 * implements it; declared here so fire, the relay and the operations reach a tenant's
 * tables through the runtime, importing nothing of storage/).
 */
export interface TenantSchemas {
  /**
   * The schema a tenant's outbox tables live in (`createOutbox({ tenantSchema })`).
   * @throws {ConfigurationError} for a schema name that is no plain identifier.
   */
  schemaOf(tenant: string): string;
  /**
   * The runtime of one schema's outbox: this outbox's, with the store and table names of
   * that schema (made once per schema, then cached). Everything else is the outbox's own,
   * read through the prototype, so later changes (`aroundDelivery`, `taskBackend`) show.
   */
  runtimeOf(schema: string): Runtime;
}

/**
 * What one outbox instance keeps between calls. Per runtime, never per module, so two
 * outboxes in one process (or one transaction) never see each other's state.
 */
export interface RuntimeState {
  /** The last claim time handed out, so claim tokens strictly increase (see newClaimToken). */
  lastClaimMs: number;
  /** How many relays this outbox started: names them `relay-N`. */
  relays: number;
  /** The topics fired in each open transaction, signalled once it has really committed. */
  readonly pendingSignals: WeakMap<Transaction, Set<string>>;
  /**
   * The receivers already warned that they defer (`RetryAfter(…, { counts: false })`)
   * without a `giveUpAfter`, so the deferral was counted: one warning per receiver per
   * outbox instance, not one per attempt.
   */
  readonly countedDeferralWarned: Set<string>;
  /** Each set of lanes a claim served, with its key filter and lease (see laneClaimOf). */
  readonly laneClaims: Map<string, LaneClaim>;
}

/**
 * What fire, the relay and the test harness share about one outbox instance. Internal:
 * reached from `outboxkit/testing` through {@link runtimeOf}, never part of the public API.
 */
export interface Runtime {
  readonly config: OutboxConfig;
  readonly sequelize: Sequelize;
  /**
   * The database's entry in the dialect registry: what fire, capture and the relay ask
   * of the database (`dialect.capabilities`), never its name.
   */
  readonly dialect: DialectEntry;
  readonly store: OutboxStore;
  /**
   * The outbox's table names (prefix and schema applied): what a read outside the store's
   * roles needs — the console's pages, the holding dead letters (src/ops/held-back.ts).
   */
  readonly tables: TableNames;
  readonly wakeup: OutboxWakeup | undefined;
  /**
   * The outbox's stores in other schemas, one per schema: a schema per tenant
   * (`settings.tenancy: 'schema'`, where `fire()` writes through it) and the schemas a relay
   * or `migrate()` is given (`{ schemas }`, under any tenancy). Present exactly where the
   * database has schemas (the `schemas` capability), undefined elsewhere, which is what
   * refuses `{ schemas }` there. On a schema's own runtime, the same object (read through
   * the prototype), and `schema` names the schema.
   */
  readonly tenantSchemas?: TenantSchemas;
  /** On the runtime of one schema ({@link TenantSchemas.runtimeOf}): that schema. */
  readonly schema?: string;
  /**
   * The NOTIFY throttle of a `notifyInWrite` wakeup given `notifyCoalesceMs`
   * (wakeups/notify-coalescing.ts); undefined otherwise, and then every write notifies.
   */
  readonly notifyCoalescer?: NotifyGate;
  readonly logger: OutboxLogger;
  readonly events: SafeEmitter;
  /** The real clock: when rows are recorded and attempts run. */
  readonly clock: () => Date;
  /**
   * The same clock in epoch milliseconds, without a `Date`: what the relay's per-row reads
   * use (a `Date` is ~100 B of garbage, and a `deliver` row read the clock twice).
   * `Date.now` on the real clock; `clock().getTime()` on an injected one.
   */
  readonly nowMs: () => number;
  /** Every timer goes through it, so tests move time (see {@link Scheduler}). */
  readonly scheduler: Scheduler;
  /** A value in [0, 1) for the backoff's full jitter. */
  readonly jitter: () => number;
  /** host:pid:random, the prefix of every worker id this process uses. */
  readonly processId: string;
  /** Mutable state of this instance alone. */
  readonly state: RuntimeState;
  /**
   * The hooks around each durable attempt, outermost first; `undefined` (never empty) when
   * there are none, so the relay's hot path tests one field and adds nothing else. Not
   * readonly: `outbox.metrics()` appends its timing hook (innermost) after creation, and
   * the relay reads this field afresh at every attempt.
   */
  aroundDelivery?: readonly AroundDelivery[];
  /**
   * Where the relay hands the rows of `site: 'task'` receivers (`createOutbox({
   * taskBackend })`); `undefined` when none is configured (then no receiver declares that
   * site: createOutbox refuses it). Set once the outbox exists, since a backend may be
   * made from the outbox itself (a test's inline backend).
   */
  taskBackend?: TaskBackend;
  /** What adds headers to every fired event (a trace context); `undefined` when nothing does. */
  readonly fireHeaders?: readonly FireHeaders[];
  /**
   * Arrange the first attempt of the `eager` receivers of what a transaction fired, once it
   * commits (relay/eager.ts's `arrangeEager`). Handed in by `createOutbox`, so fire/ calls
   * the relay's delivery without importing relay/ (the folders rank fire below relay).
   */
  readonly arrangeEager: (
    rt: Runtime,
    planned: readonly PlannedEvent[],
    fired: readonly FiredEvent[],
    transaction: Transaction,
  ) => void;
}

/** A fresh {@link RuntimeState}. */
export function newRuntimeState(): RuntimeState {
  return {
    lastClaimMs: 0,
    relays: 0,
    pendingSignals: new WeakMap(),
    countedDeferralWarned: new Set(),
    laneClaims: new Map(),
  };
}

const RUNTIME = Symbol.for('outboxkit.runtime');

/** Attach the runtime to an outbox instance. */
export function attachRuntime(target: object, runtime: Runtime): void {
  Object.defineProperty(target, RUNTIME, { value: runtime, enumerable: false });
}

/** The runtime behind an outbox instance (for `outboxkit/testing`). */
export function runtimeOf(outbox: object): Runtime {
  const runtime = (outbox as Record<symbol, Runtime | undefined>)[RUNTIME];
  if (!runtime) throw new TypeError('expected an outbox made by createOutbox()');
  return runtime;
}
