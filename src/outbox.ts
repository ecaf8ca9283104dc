import type { Sequelize } from 'sequelize';
import type { z } from 'zod';
import { warnWhenCaptureUninstalled } from './capture/uninstalled.js';
import {
  isOutboxConfig,
  type OutboxConfig,
  type ResolvedReceiver,
} from './declare/define-outbox.js';
import type { EventDefinition } from './declare/event.js';
import type { TopicPattern } from './declare/receiver.js';
import type { AnyEvent, DeliveryStatus } from './declare/types.js';
import { ConfigurationError } from './errors/outbox-error.js';
import { migrateEventColumns } from './event-columns/migrate.js';
import {
  type FiredEvent,
  type FireManyOptions,
  type FireMessage,
  type FireOptions,
  fireEvents,
} from './fire/fire.js';
import { buildCatalogue, type Catalogue, listensFor, whatListensTo } from './introspect/index.js';
import { type AroundDelivery, type FireHeaders, hookList } from './observe/around-delivery.js';
import { type OutboxEventMap, SafeEmitter } from './observe/events.js';
import { consoleLogger, type OutboxLogger } from './observe/logger.js';
import { registerOutboxMetrics } from './observe/metrics/outbox-metrics.js';
import type { MetricsOptions, MetricsRegistry } from './observe/metrics/registry.js';
import { type PinoLikeLogger, toOutboxLogger } from './observe/pino-logger.js';
import type { EventIdentity } from './ops/arguments.js';
import { type CancelDeliveriesOptions, type CancelResult, cancelDeliveries } from './ops/cancel.js';
import { type CleanupOptions, cleanupDeadLettered, cleanupPublished } from './ops/cleanup.js';
import { type DeadLetter, type DeadLettersOptions, deadLetters } from './ops/dead-letters.js';
import { type HealthOptions, type OutboxHealth, outboxHealth } from './ops/health.js';
import { type PruneEventsOptions, pruneEvents } from './ops/prune.js';
import {
  type QuietReceiver,
  type QuietReceiversOptions,
  quietReceivers,
} from './ops/quiet-receivers.js';
import { type ReplayEventsOptions, type ReplayResult, replayEvents } from './ops/replay.js';
import { type RequeueDeadOptions, requeueDead } from './ops/requeue.js';
import {
  type ClaimBatchOptions,
  type ClaimedBatch,
  claimForWorker,
} from './relay/claim-for-worker.js';
import { newProcessId } from './relay/claim-token.js';
import {
  type CoveredSchemasOptions,
  countAcross,
  coveredSchemas,
} from './relay/covered-schemas.js';
import { type DeliverOneOptions, deliverOne } from './relay/deliver-one.js';
import { type DeliverPendingOptions, deliverPending } from './relay/deliver-pending.js';
import { arrangeEager } from './relay/eager.js';
import { type RelayReport, type RunRelayOptions, runRelay } from './relay/run-relay.js';
import {
  attachRuntime,
  newRuntimeState,
  type Runtime,
  realScheduler,
  type Scheduler,
} from './runtime.js';
import { dialectOf, dialectsWith, listDialects, wakeupRefusal } from './storage/dialects.js';
import type { OutboxStore } from './storage/store.js';
import { tableNames } from './storage/tables.js';
import {
  checkSchemas,
  defaultTenantSchema,
  onTenantSchema,
  tenantSchemas,
} from './storage/tenant-schemas.js';
import type { TaskBackend } from './tasks/task-backend.js';
import { inProcessWakeup } from './wakeups/in-process.js';
import { NotifyCoalescer } from './wakeups/notify-coalescing.js';
import type { OutboxWakeup } from './wakeups/wakeup.js';

/** Options of {@link createOutbox}: where the outbox lives and how it talks. */
export interface CreateOutboxOptions {
  /** The application's Sequelize instance: events commit on its connections. */
  readonly sequelize: Sequelize;
  /**
   * A PostgreSQL schema for the outbox's tables (created by `migrate()`).
   * @defaultValue the connection's search path (usually `public`)
   */
  readonly schema?: string;
  /**
   * Under `settings.tenancy: 'schema'`, the schema each tenant's outbox tables live in
   * (the same table names in every schema). A function, not config: it is the app's own
   * naming of its tenants' schemas (`(t) => \`tenant_${t}\``). Its answer must be a plain
   * identifier (letters, digits and `_`), and two tenants must not share one, since the
   * schema is what keeps their keys apart.
   * @defaultValue the tenant's own name (refused, naming the tenant, when it is no identifier)
   */
  readonly tenantSchema?: (tenant: string) => string;
  /**
   * The prefix of the outbox's table names.
   * @defaultValue `'outbox_'`
   */
  readonly tablePrefix?: string;
  /**
   * How relays learn that something was written. `null` for none (relays poll).
   * @defaultValue {@link inProcessWakeup}
   */
  readonly wakeup?: OutboxWakeup | null;
  /**
   * Where outboxkit logs: an {@link OutboxLogger} (`(message, fields)`: your own, winston),
   * or a pino logger as it is — recognised by pino's own marker and adapted with
   * `pinoLogger()`, which also adapts bunyan and other `(fields, message)` loggers when
   * called by hand. `prettyLogger()` and `jsonLogger()` are the CLI's formats.
   * @defaultValue {@link consoleLogger}: info, warnings and errors to the console, one line each
   */
  readonly logger?: OutboxLogger | PinoLikeLogger;
  /** The real clock (recorded_at, attempts). Tests may inject one. @defaultValue `() => new Date()` */
  readonly clock?: () => Date;
  /**
   * Every timer the outbox starts (lease renewals, attempt timeouts, idle waits, backoffs
   * after a database error) goes through this, beside `clock`, so a test can move time
   * instead of sleeping through it. @defaultValue Node's timers, unref'd
   */
  readonly scheduler?: Scheduler;
  /** A value in [0, 1) for the backoff's full jitter. @defaultValue `Math.random` */
  readonly jitter?: () => number;
  /**
   * PostgreSQL: run `fire()`'s statement and the handler acknowledgement as named prepared
   * statements on the transaction's connection, parsed and planned once per connection
   * (a third of the statement's cost on the hot path). Turn it off behind a pooler that
   * cannot carry prepared statements across transactions (PgBouncer in transaction mode
   * before 1.21).
   * @defaultValue true
   */
  readonly preparedStatements?: boolean;
  /**
   * A hook (or several, outermost first) around each durable attempt: for tracing, metrics,
   * logging. It observes and cannot lose a delivery; see {@link AroundDelivery}. An option
   * here rather than in the config: a function is runtime wiring, not declared data.
   * `openTelemetry()` from `outboxkit/opentelemetry` returns one.
   * @defaultValue none (the relay then adds nothing to an attempt)
   */
  readonly aroundDelivery?: AroundDelivery | readonly AroundDelivery[];
  /**
   * Headers added to every event at `fire()` (a trace context: see {@link FireHeaders}),
   * under the message's own. `openTelemetry()` returns one writing `traceparent`.
   * @defaultValue none
   */
  readonly fireHeaders?: FireHeaders | readonly FireHeaders[];
  /**
   * Where the relay hands the deliveries of receivers declared `site: 'task'`: a
   * {@link TaskBackend} (`pgBossTaskBackend(boss, { queue })`, `bullmqTaskBackend({ queue,
   * connection })`, your own), or a function of the outbox returning one (a test's
   * `inlineTaskBackend`, which runs each task at once through this outbox). Required when
   * a receiver declares that site; `outbox.close()` closes it.
   * @defaultValue none (a receiver declaring `site: 'task'` is then refused)
   */
  readonly taskBackend?: TaskBackend | ((outbox: Outbox) => TaskBackend);
}

/**
 * `outbox.migrate()`: the outbox's own tables, or each schema of `schemas` in turn (each
 * created when missing, under its own migration lock).
 */
async function migrateSchemas(rt: Runtime, options: MigrateOptions = {}): Promise<void> {
  const targets =
    options.schemas === undefined
      ? [rt]
      : checkSchemas(rt, 'migrate', options.schemas).map((s) => rt.tenantSchemas!.runtimeOf(s));
  for (const target of targets) {
    await target.store.migrate();
    // The application's event columns, after the library's own migrations.
    await migrateEventColumns(target);
  }
}

/** Options of {@link Outbox.migrate}. */
export interface MigrateOptions {
  /**
   * Migrate the outbox tables of these schemas instead of the outbox's own (a schema per
   * tenant, `settings.tenancy: 'schema'`; PostgreSQL only): each schema is created when
   * missing and migrated on its own, in the order given, each under its own lock.
   * @defaultValue the outbox's own schema (`createOutbox({ schema })`) alone
   */
  readonly schemas?: readonly string[];
}

type Events<C> = C extends OutboxConfig<infer E> ? E : never;
export type EventName<C> = Extract<keyof Events<C>, string>;
type Input<C, N extends EventName<C>> =
  Events<C>[N] extends EventDefinition<infer S extends z.ZodType> ? z.input<S> : never;
export type Output<C, N extends EventName<C>> =
  Events<C>[N] extends EventDefinition<infer S extends z.ZodType> ? z.output<S> : never;

/** One event for {@link Outbox.fireMany}, typed by name. */
export type TypedFireMessage<C> = {
  [N in EventName<C>]: FireMessage<N, Input<C, N>>;
}[EventName<C>];

/**
 * An outbox: fire events in your transactions, run relays that deliver them.
 * Made by {@link createOutbox}; holds no hidden globals, so two outboxes never interfere.
 */
export interface Outbox<C extends OutboxConfig = OutboxConfig> {
  /** The validated config this outbox runs. */
  readonly config: C;
  /**
   * Create or upgrade the outbox's tables. Idempotent, and safe when two processes run it
   * at once (PostgreSQL: an advisory lock; SQLite: an immediate transaction). Then add the
   * declared event columns (`defineOutbox({ eventColumns })`) and their indexes that the
   * events table lacks; a column no longer declared is kept (and logged), never dropped.
   * @throws {ConfigurationError} for an event column whose type differs from its declaration.
   */
  migrate(options?: MigrateOptions): Promise<void>;
  /**
   * Record an event in the caller's transaction and owe it to its durable receivers.
   *
   * The event row and one delivery row per durable receiver are written in one statement
   * inside `options.transaction` (or Sequelize's CLS transaction), so the obligation
   * exists if and only if the business change commits. `inline` receivers run here, in the
   * transaction (a throw aborts it); `onCommit` receivers run after the commit (a throw is
   * logged). Nothing is recorded or signalled for a rollback.
   *
   * @throws {ValidationError} before anything is written: an unknown name, a payload its
   * schema refuses, a value JSON cannot hold (NaN at any depth), an empty header name, a
   * transaction of another Sequelize instance.
   * @throws {ConfigurationError} when the outbox tables are missing ("Run `npx outbox
   * migrate`", the driver's error as `cause`), or once the outbox is closed.
   */
  fire<N extends EventName<C>>(
    name: N,
    payload: Input<C, N>,
    options?: FireOptions,
  ): Promise<FiredEvent<Output<C, N>>>;
  /**
   * Record many events in one statement, in the order given (so the events of an ordering
   * key are delivered in that order). Returns them in that order; for an idempotency key
   * already stored, the stored event. Refuses as {@link Outbox.fire} does (missing tables,
   * a closed outbox).
   */
  fireMany(
    messages: readonly TypedFireMessage<C>[],
    options?: FireManyOptions,
  ): Promise<FiredEvent[]>;
  /** Run a relay until `options.signal` aborts (or `passes` are spent). See {@link RunRelayOptions}. */
  runRelay(options?: RunRelayOptions): Promise<RelayReport>;
  /** Claim and deliver what is owed now, through the relay's own path, and report. */
  deliverPending(options?: DeliverPendingOptions): Promise<Record<DeliveryStatus, number>>;
  /**
   * Run one delivery row now and record its outcome, through the relay's own claim (so a
   * row that is not owed — settled, backing off, claimed, or behind its ordering key — is
   * refused). Returns the status recorded, or `null` when it recorded none.
   *
   * A task backend's worker passes the claim its message carries (`{ claimedBy, claimedAt }`,
   * exactly as handed off): the row is then first taken under exactly that claim, in one
   * conditional update committed before the receiver runs, and a duplicate message, one
   * held past its lease, or one for a settled row returns `null` without running it. See
   * {@link DeliverOneOptions}.
   */
  deliverOne(deliveryId: string, options?: DeliverOneOptions): Promise<DeliveryStatus | null>;
  /**
   * Take up to `limit` owed deliveries for a worker of the app's own, through the relay's
   * own claim (the reference's `claim_batch`): leased, so a worker that dies leaves them to
   * be claimed again once the lease lapses; chosen by `available_at` and the event's order,
   * never by a high-water mark. Returns the claim (`claimedBy`, `claimedAt` as ISO text)
   * and the ids, all JSON. See {@link ClaimBatchOptions} for what it refuses.
   */
  claimBatch(options: ClaimBatchOptions): Promise<ClaimedBatch>;
  /**
   * Count delivery rows by status: a quick look at the backlog. Given `{ schemas }` or
   * `{ tenants }` (a schema per tenant), summed across those schemas; under
   * `settings.tenancy: 'schema'` one of them is required, since the outbox's own schema
   * holds no tenant's events and would read as an empty outbox.
   * @throws {ConfigurationError} naming `schemas` under schema tenancy without either.
   */
  countDeliveries(options?: CoveredSchemasOptions): Promise<Record<DeliveryStatus, number>>;
  /**
   * Describe every declared event, its payload shape and its receivers: plain data,
   * sorted by name throughout, built from the declarations so it cannot drift.
   * `npx outbox codegen` writes it to `catalogue/catalogue.json` for CI to diff.
   */
  catalogue(): Catalogue;
  /**
   * Every receiver declared for one event, sorted by key, without the wildcards; pass
   * `AnyEvent` for every wildcard, or a topic pattern (`'library.*'`) for the receivers
   * declared for exactly that pattern.
   */
  whatListensTo(
    event: EventName<C> | EventDefinition | AnyEvent | TopicPattern,
  ): ResolvedReceiver[];
  /** The event one receiver is declared for; undefined for an unknown key or a wildcard. */
  listensFor(receiverKey: string): string | undefined;
  /** Observe the relay (`relay:delivered`, `relay:deadLettered`, …); returns an unsubscribe. */
  on<K extends keyof OutboxEventMap>(
    name: K,
    listener: (payload: OutboxEventMap[K]) => void,
  ): () => void;
  /**
   * Release the wakeup and the transports' connections. Does not close Sequelize. From
   * then on `fire()` and `fireMany()` refuse (a `ConfigurationError` naming the outbox).
   */
  close(): Promise<void>;
  /**
   * How far behind the outbox is, at `now` (default: the clock): owed, the oldest owed
   * (from its due time, else its event's record time), lapsed leases, claimed, scheduled,
   * dead, and the receivers with something owed, dead or scheduled, worst first. One cheap
   * statement over the owed and dead rows; what a probe or a metrics scrape reads.
   */
  health(options?: HealthOptions): Promise<OutboxHealth>;
  /**
   * The durable receivers with no success inside `within` (default: `retentionDays`), a
   * receiver that never ran included (`lastSucceededAt` null), read from the live rows and
   * the last-success table the prune keeps.
   */
  quietReceivers(options?: QuietReceiversOptions): Promise<QuietReceiver[]>;
  /**
   * Register the outbox's Prometheus metrics (`outbox_deliveries_total{receiver,outcome}`,
   * `outbox_delivery_duration_seconds`, claim and record durations, gauges read from
   * {@link health} at scrape time) on `registry`, a `prom-client` Registry (a new one when
   * omitted), and return it. Needs `prom-client` installed; loads it only when called.
   * Under a schema per tenant, name the schemas the gauges cover (`{ schemas }` or
   * `{ tenants }`, as for `runRelay`); each gauge then has a series per `schema` label.
   * @throws {ConfigurationError} naming `schemas` under schema tenancy without either.
   */
  metrics<R extends MetricsRegistry = MetricsRegistry>(registry?: R, options?: MetricsOptions): R;
  /**
   * Withdraw the owed deliveries of these events so they never run — an offer accepted
   * before its expiry, a reminder for an order already paid. Pending and failed rows become
   * `cancelled`; claimed rows are left to their worker and counted (`inFlight`); settled
   * rows keep their outcome. Joins `options.transaction` (or the CLS one), so the cancel
   * commits with the change that made the work moot. Events are given by id (the UUID,
   * `OutboxEvent.id`) or as the events themselves. See {@link CancelDeliveriesOptions}.
   * @throws {ValidationError} for an entry that is no event id, before anything is written.
   */
  cancelDeliveries(
    events: readonly EventIdentity[],
    options?: CancelDeliveriesOptions,
  ): Promise<CancelResult>;
  /**
   * Make these events owed again: settled rows reopened, durable receivers (of the config
   * as it is now) without a row added, both owed from now — `due` and `targets` resolved
   * again. Claimed rows are left alone. See {@link ReplayEventsOptions}.
   * @throws {ValidationError} for a bad id or receiver key; {@link PayloadDecodeError} when
   * a fan-out or scheduled receiver's event no longer decodes; whatever `targets`/`due` throw.
   */
  replayEvents(
    events: readonly EventIdentity[],
    options?: ReplayEventsOptions,
  ): Promise<ReplayResult>;
  /**
   * Give dead letters their attempt budget back: pending, attempts zero, owed from now,
   * by receiver, row, or topic (names and `prefix*` patterns), in chunks of
   * `settings.batchSize`. Returns how many were requeued. See {@link RequeueDeadOptions}.
   */
  requeueDead(options?: RequeueDeadOptions): Promise<number>;
  /** The dead letters, newest first, with their errors and events. See {@link DeadLettersOptions}. */
  deadLetters(options?: DeadLettersOptions): Promise<DeadLetter[]>;
  /**
   * Delete the events that are due, in batches bounded by rows, and resolve to how many
   * went: consumed under a `succeeded`/`settled` retention, past their own window, or past
   * the ordinary one (`olderThan`, else `settings.retentionDays`), settled in every case.
   * An idle relay runs it with the defaults every `settings.relayPruneSeconds`.
   * See {@link PruneEventsOptions}.
   */
  pruneEvents(options?: PruneEventsOptions): Promise<number>;
  /**
   * Delete dead delivery rows dead-lettered longer ago than `olderThan`, batch by batch
   * (which also lets the later events of their ordering keys go). Never run by the relay.
   */
  cleanupDeadLettered(options: CleanupOptions): Promise<number>;
  /**
   * Delete events whose every delivery succeeded (or was cancelled), recorded longer ago
   * than `olderThan`, whatever their retention, batch by batch. Never run by the relay.
   */
  cleanupPublished(options: CleanupOptions): Promise<number>;
}

/**
 * Create an outbox for a config and a Sequelize instance.
 *
 * @example
 * ```ts
 * const outbox = createOutbox(config, { sequelize });
 * await outbox.migrate();
 * await sequelize.transaction(async (transaction) => {
 *   const order = await Order.create({ ... }, { transaction });
 *   await outbox.fire('shop.OrderPlaced', { orderId: order.id }, { transaction });
 * });
 * ```
 * @throws {ConfigurationError} for a config not made by `defineOutbox`, an unsupported
 * dialect, or a wakeup the dialect cannot serve.
 */
export function createOutbox<C extends OutboxConfig>(
  config: C,
  options: CreateOutboxOptions,
): Outbox<C> {
  if (!isOutboxConfig(config)) {
    throw new ConfigurationError(
      'createOutbox(config) needs the result of defineOutbox({ ... }); got something else',
      { path: 'config' },
    );
  }
  const sequelize = options?.sequelize;
  if (
    !sequelize ||
    typeof sequelize.query !== 'function' ||
    typeof sequelize.transaction !== 'function'
  ) {
    throw new ConfigurationError(
      'createOutbox(config, { sequelize }) needs your Sequelize instance',
      { path: 'sequelize' },
    );
  }
  const aroundDelivery = hookList(options.aroundDelivery, 'aroundDelivery');
  const fireHeaders = hookList(options.fireHeaders, 'fireHeaders');
  const entry = dialectOf(sequelize, { who: 'createOutbox(config, { sequelize })' });
  if (config.settings.tenancy === 'schema' && !entry.capabilities.schemas) {
    throw new ConfigurationError(
      `settings.tenancy: 'schema' keeps each tenant's outbox in a schema of its own, which ${entry.title} does not have (schemas are ${listDialects(
        dialectsWith((c) => c.schemas),
        { join: 'or', titles: true },
      )}'s); declare settings: { tenancy: 'column' } instead: one set of tables, each event naming its tenant`,
      { path: 'settings.tenancy' },
    );
  }
  if (options.tenantSchema !== undefined && config.settings.tenancy !== 'schema') {
    throw new ConfigurationError(
      `createOutbox({ tenantSchema }) maps tenants to schemas, but this outbox's settings.tenancy is '${config.settings.tenancy}'; declare settings: { tenancy: 'schema' } or drop tenantSchema`,
      { path: 'tenantSchema' },
    );
  }
  if (options.tenantSchema !== undefined && typeof options.tenantSchema !== 'function') {
    throw new ConfigurationError(
      'createOutbox({ tenantSchema }) must be a function of a tenant name returning its schema',
      { path: 'tenantSchema' },
    );
  }
  if (options.schema !== undefined && !entry.capabilities.schemas) {
    throw new ConfigurationError(
      `createOutbox({ schema }) is for ${listDialects(
        dialectsWith((c) => c.schemas),
        { join: 'or', titles: true },
      )}; ${entry.name} has no schemas`,
      { path: 'schema' },
    );
  }
  const taskReceiver = config.receivers.find((r) => r.mode === 'durable' && r.site === 'task');
  if (taskReceiver && config.settings.tenancy === 'schema') {
    // A task's message names its delivery row by id, and `deliverOne` reads the outbox's own
    // schema: under a schema per tenant it would run another tenant's row or none.
    throw new ConfigurationError(
      `receivers["${taskReceiver.key}"] declares site: 'task', which a schema per tenant (settings.tenancy: 'schema') does not serve yet: a task names its row by id in one schema; declare it site: 'relay', or keep tenants in a column (tenancy: 'column')`,
      { path: 'settings.tenancy' },
    );
  }
  if (taskReceiver && options.taskBackend === undefined) {
    throw new ConfigurationError(
      `receivers["${taskReceiver.key}"] declares site: 'task', but createOutbox(config, { taskBackend }) was given none: pass one (pgBossTaskBackend(boss, { queue }), bullmqTaskBackend({ queue, connection }), or inlineTaskBackend from outboxkit/testing), or declare the receiver site: 'relay'`,
      { path: 'taskBackend' },
    );
  }
  if (
    options.taskBackend !== undefined &&
    typeof options.taskBackend !== 'function' &&
    (typeof options.taskBackend?.enqueue !== 'function' ||
      typeof options.taskBackend?.close !== 'function')
  ) {
    throw new ConfigurationError(
      'createOutbox({ taskBackend }) must be a TaskBackend ({ name, enqueue(handOff), close() }) or a function of the outbox returning one',
      { path: 'taskBackend' },
    );
  }
  const logger = options.logger === undefined ? consoleLogger : toOutboxLogger(options.logger);
  const wakeup = options.wakeup === undefined ? inProcessWakeup() : (options.wakeup ?? undefined);
  const refusal = wakeup?.capabilities && wakeupRefusal(entry, wakeup.capabilities);
  if (wakeup && refusal) {
    throw new ConfigurationError(
      `createOutbox({ wakeup }): ${wakeup.name} ${refusal} (the outbox's Sequelize uses ${entry.name}); use inProcessWakeup() or none`,
      { path: 'wakeup' },
    );
  }
  const notify = wakeup?.capabilities?.notifyInWrite?.channel;
  const tables = tableNames(options.tablePrefix ?? 'outbox_', options.schema);
  // The declared event columns go into the insert's statements (built once per store).
  const storeOptions = {
    notifyChannel: notify,
    preparedStatements: options.preparedStatements,
    eventColumns: config.eventColumns,
  };
  const store: OutboxStore = entry.createStore(sequelize, tables, storeOptions);
  if (notify && !store.capabilities.notifiesInWrite) {
    throw new ConfigurationError(
      `createOutbox({ wakeup }): ${wakeup?.name} sends its signal inside the write, which ${entry.name} cannot do`,
      { path: 'wakeup' },
    );
  }
  const events = new SafeEmitter(logger);
  const clock = options.clock;
  const nowMs = clock ? () => clock().getTime() : Date.now;
  const scheduler = options.scheduler ?? realScheduler;
  const coalesceMs = wakeup?.capabilities?.notifyInWrite?.coalesceMs ?? 0;
  const notifyCoalescer =
    notify && coalesceMs > 0
      ? new NotifyCoalescer({
          intervalMs: coalesceMs,
          nowMs,
          scheduler,
          logger,
          send: (topics) =>
            sequelize.transaction(
              (t) => store.notifyInTransaction?.(topics, t) ?? Promise.resolve(),
            ),
        })
      : undefined;
  const runtime: Runtime = {
    config,
    sequelize,
    dialect: entry,
    store,
    tables,
    wakeup,
    notifyCoalescer,
    logger,
    events,
    clock: clock ?? (() => new Date()),
    nowMs,
    scheduler,
    jitter: options.jitter ?? Math.random,
    processId: newProcessId(),
    state: newRuntimeState(),
    aroundDelivery,
    fireHeaders,
    arrangeEager,
    tenantSchemas: entry.capabilities.schemas
      ? tenantSchemas(() => runtime, {
          entry,
          prefix: tables.prefix,
          storeOptions,
          tenantSchema: options.tenantSchema ?? defaultTenantSchema,
        })
      : undefined,
  };
  const unwatchCapture = warnWhenCaptureUninstalled(runtime);
  // Set by close(): fire() and fireMany() refuse from then on, since the wakeup and the
  // transports they would signal are released (the event would sit unannounced).
  let closed = false;
  const refuseClosed = (where: string) => {
    if (!closed) return;
    throw new ConfigurationError(
      `${where}: this outbox (${tables.events}, ${entry.title}) is closed — outbox.close() released its wakeup and transports; fire through an outbox that is open (createOutbox again)`,
      { path: 'close' },
    );
  };
  const outbox: Outbox<C> = {
    config,
    migrate: (migrateOptions) => migrateSchemas(runtime, migrateOptions),
    fire: async (name, payload, fireOptions = {}) => {
      refuseClosed('fire()');
      const [fired] = await fireEvents(
        runtime,
        [{ ...fireOptions, name, payload }],
        fireOptions.transaction,
        'fire()',
        fireOptions.wakeup !== false,
      );
      return fired as FiredEvent<never>;
    },
    fireMany: async (messages, fireOptions = {}) => {
      refuseClosed('fireMany()');
      return fireEvents(
        runtime,
        messages as readonly FireMessage[],
        fireOptions.transaction,
        'fireMany()',
        fireOptions.wakeup !== false,
      );
    },
    runRelay: (relayOptions) => runRelay(runtime, relayOptions),
    deliverPending: (pendingOptions) => deliverPending(runtime, pendingOptions),
    deliverOne: (deliveryId, oneOptions) => deliverOne(runtime, deliveryId, oneOptions),
    claimBatch: (claimOptions) => claimForWorker(runtime, claimOptions),
    countDeliveries: (countOptions) => countAcross(runtime, countOptions),
    catalogue: () => buildCatalogue(config),
    whatListensTo: (event) => whatListensTo(config, event),
    listensFor: (key) => listensFor(config, key),
    on: (name, listener) => events.on(name, listener),
    health: (healthOptions) => onTenantSchema(runtime, healthOptions, outboxHealth),
    quietReceivers: (quietOptions) => quietReceivers(runtime, quietOptions),
    metrics: (registry, metricsOptions) => {
      const covered = coveredSchemas(runtime, 'outbox.metrics', metricsOptions);
      const sources = covered.targets.map((rt) => ({
        schema: covered.named ? (rt.tables.schema ?? rt.schema ?? '') : undefined,
        read: () => outboxHealth(rt),
      }));
      return registerOutboxMetrics(runtime, sources, registry, metricsOptions);
    },
    pruneEvents: (pruneOptions) => onTenantSchema(runtime, pruneOptions, pruneEvents),
    cleanupDeadLettered: (cleanupOptions) => cleanupDeadLettered(runtime, cleanupOptions),
    cleanupPublished: (cleanupOptions) => cleanupPublished(runtime, cleanupOptions),
    close: async () => {
      closed = true;
      unwatchCapture();
      const closing: Promise<unknown>[] = [];
      // The trailing NOTIFY of coalesced writes goes out now rather than with its timer.
      await notifyCoalescer?.close();
      if (wakeup) closing.push(wakeup.close());
      if (runtime.taskBackend) closing.push(runtime.taskBackend.close());
      const deliveries = new Set(config.receivers.map((r) => r.delivery).filter((d) => d?.close));
      for (const d of deliveries) closing.push(d!.close!());
      const results = await Promise.allSettled(closing);
      for (const r of results)
        if (r.status === 'rejected') logger.warn('a resource failed to close', { error: r.reason });
    },
    cancelDeliveries: (events, o) =>
      onTenantSchema(runtime, o, (rt, x) => cancelDeliveries(rt, events, x)),
    replayEvents: (events, o) => onTenantSchema(runtime, o, (rt, x) => replayEvents(rt, events, x)),
    requeueDead: (o) => onTenantSchema(runtime, o, requeueDead),
    deadLetters: (o) => onTenantSchema(runtime, o, deadLetters),
  };
  attachRuntime(outbox, runtime);
  if (options.taskBackend !== undefined) {
    runtime.taskBackend =
      typeof options.taskBackend === 'function' ? options.taskBackend(outbox) : options.taskBackend;
  }
  return outbox;
}
