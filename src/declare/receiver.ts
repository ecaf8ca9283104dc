import type { z } from 'zod';
import type { Duration } from './duration.js';
import type { EventDefinition } from './event.js';
import type {
  AnyEvent,
  DeliveryContext,
  DeliveryFailure,
  DeliveryMode,
  Handler,
  OutboxDelivery,
  OutboxEvent,
} from './types.js';

const RECEIVER = Symbol.for('outboxkit.receiver');

/**
 * Where a durable receiver runs: `'relay'` in the relay worker, `'task'` in the worker of
 * the outbox's task backend (see {@link CommonReceiverOptions.site}).
 */
export type ExecutionSite = 'relay' | 'task';

/** The retry curve of one receiver: full jitter, capped. */
export interface BackoffOptions {
  /**
   * The first retry's ceiling, in seconds; each later one doubles it. Full jitter applies:
   * a wait is drawn from zero up to the ceiling, so a base of 60 means a first retry
   * somewhere in the next minute, never "in a minute".
   * @defaultValue `settings.backoff.baseSeconds` (1)
   */
  readonly baseSeconds?: number;
  /**
   * The ceiling's cap, in seconds.
   * @defaultValue `settings.backoff.capSeconds` (3600)
   */
  readonly capSeconds?: number;
}

/** Options every receiver accepts. */
export interface CommonReceiverOptions {
  /**
   * When the receiver runs. See {@link DeliveryMode}.
   * @defaultValue `'durable'`
   */
  readonly mode?: DeliveryMode;
  /**
   * The key written onto every delivery row, which is what the row is found by. Defaults
   * to the receiver's key in `defineOutbox({ receivers })`. At most 255 characters: a
   * longer one would be truncated by PostgreSQL (orphaning its rows) and pass on SQLite.
   */
  readonly key?: string;
  /**
   * How many attempts a durable delivery gets before it is dead-lettered. Copied onto each
   * delivery row at fire time, so a deploy does not change the budget of rows in flight.
   * @defaultValue 5
   */
  readonly maxAttempts?: number;
  /**
   * How long a claimed delivery is leased to one relay, in seconds. A receiver still
   * working when its lease lapses has its row taken by another relay, so a receiver that
   * legitimately runs long declares a longer lease here. A claim is made before anyone
   * knows which receivers its rows are for, so it stamps `settings.leaseSeconds` plus 10
   * percent (or, where every durable receiver shares one lease no longer than that, that
   * lease plus 10 percent); a row of this receiver is extended to its own lease just before
   * it starts, unless the claim already covers it. One long receiver so never delays the
   * recovery of the others' rows.
   * @defaultValue `settings.leaseSeconds` (60)
   */
  readonly leaseSeconds?: number;
  /** This receiver's retry curve; read when an attempt fails, so a deploy applies at once. */
  readonly backoff?: BackoffOptions;
  /**
   * Called after a failed attempt has been recorded, outside any transaction, so the
   * receiver can keep a durable record of its own failure. A throw is logged and swallowed.
   */
  readonly onFailure?: (failure: DeliveryFailure) => unknown | Promise<unknown>;
  /**
   * How long one attempt may take, in seconds, before it counts as failed. Keep it below
   * the lease: a lease running out mid-delivery lets another relay deliver the event too.
   * @defaultValue `settings.deliveryTimeoutSeconds` (30)
   */
  readonly timeoutSeconds?: number;
  /**
   * The relay processes that claim this receiver's rows: `npx outbox relay --lane mail`
   * (or `runRelay({ lane: 'mail' })`) claims only the receivers declared with
   * `lane: 'mail'`, and a relay started without a lane claims every row no named lane
   * takes — including rows of a receiver since deleted, which it records `orphaned`. Read
   * at claim time, never copied onto the row, so moving a receiver to another lane moves
   * its owed rows with it. How a slow receiver stops holding up the rest; declared here
   * rather than as relay flags because the default relay is the one that must leave it
   * out, and an exclusion list kept in deployment manifests goes stale.
   * @defaultValue `'default'`
   */
  readonly lane?: string;
  /**
   * Also attempt the delivery right after commit, in the firing process, with the relay
   * as the fallback for whatever a process death loses: durability at on-commit latency,
   * at the cost of a duplicate when the process dies mid-receiver, which at-least-once
   * already asks every receiver to tolerate. Runs in the firing process whatever the lane.
   * @defaultValue false
   */
  readonly eager?: boolean;
  /**
   * Where a durable receiver's code runs, apart from when (`mode`) on purpose: timing is
   * what a receiver promises about the transaction, and where its code runs is a question
   * only a queue answers. `'relay'` runs it in the relay; `'task'` has the relay claim the
   * row as always, extend its lease to this receiver's `leaseSeconds`, and hand the claim
   * to the outbox's task backend (`createOutbox(config, { taskBackend })`: pg-boss,
   * BullMQ), whose worker takes the row under exactly that claim and runs the same attempt
   * a relay runs (`outbox.deliverOne(id, claim)`). The row owns retries and dead letters;
   * the queue only carries the hand-off, and one it loses is reclaimed when the lease
   * lapses — so `leaseSeconds` must cover the job's wait in the queue as well as its run.
   * Refused beside `inline`/`onCommit` (no row to hand off) and `eager` (which means "run
   * it in the firing process"). See docs/tasks.md.
   * @defaultValue `'relay'`
   */
  readonly site?: ExecutionSite;
  /**
   * The bound that ends a delivery whose receiver keeps deferring with
   * `RetryAfter(seconds, { counts: false })`, which spends no attempt (so `maxAttempts`
   * cannot end it): once a row has been owed this long — since its due time, or since its
   * event was recorded — the next deferral dead-letters it. Without it, a deferral that
   * does not count is counted after all (with a warning), so every delivery still ends.
   * Read when an attempt defers, so a deploy applies at once.
   */
  readonly giveUpAfter?: Duration;
}

/**
 * A fan-out receiver's `targets`: the destinations one event is owed to (endpoint ids,
 * tenant slugs, anything that names one). Called by `fire()` inside the caller's
 * transaction (`context.transaction`), so a lookup reads what the change can see, its own
 * uncommitted rows included; a throw (or a rejection) fails `fire()` and rolls the change
 * back with the event.
 *
 * It may return the targets or a promise of them. The reference (written for Python)
 * refuses an `async` one, because there each call costs an event loop; in JavaScript a
 * function that reads the database cannot be synchronous, and awaiting costs a microtask,
 * so refusing it would make the table lookup the option exists for impossible. A plain
 * function returning an array is never awaited. It is still a query in the hot path: it
 * runs on every event it is owed (for a wildcard, every event fired), so make the lookup
 * indexed and return early for events it can rule out without one.
 */
export type Targets<P> = (
  event: FiringEvent<P>,
  context: DeliveryContext,
) => Iterable<string> | Promise<Iterable<string>>;

/**
 * The event a `targets` or `due` function is handed at fire time: everything the
 * receivers will see but the `sequence`, which the database draws when the row is written
 * (in the same statement as the deliveries these functions decide).
 */
export type FiringEvent<P = unknown> = Omit<OutboxEvent<P>, 'sequence'>;

/**
 * A scheduled receiver's `due`: a {@link Duration} counted from the event's `occurredAt`
 * (the domain's own time), or a function of the event returning the `Date` (or a promise
 * of it) the work is due at, for a time the event itself names. Called inside the caller's
 * transaction, as {@link Targets} is, on the same terms.
 */
export type Due<P> = Duration | ((event: FiringEvent<P>) => Date | Promise<Date>);

/** The options only a durable receiver's timing takes. */
export interface ScheduleOptions<P> {
  /**
   * Make the receiver a fan-out: one delivery row per target this returns, each with its
   * own attempts, backoff and dead letter, handed to the receiver as `context.target`. A
   * target returned twice is delivered once; returning nothing writes no row, which is how
   * a wildcard says "not this event". Each target must be a non-empty string of at most
   * 255 characters. See {@link Targets}.
   */
  readonly targets?: Targets<P>;
  /**
   * Make the receiver a scheduled reaction: its delivery is written now and runs at the
   * due time (never earlier than the fire). `context.dueAt` hands the time to the
   * receiver, which can recompute it from current state and answer an early run with
   * `NotYet`. Refused beside `inline`/`onCommit` (no row to wait in), `eager` (which means
   * "attempt it at commit") and `targets` (a recipient set resolved at fire time would be
   * stale by the due time; fire a follow-up event whose targets resolve when it is due).
   * See {@link Due}.
   */
  readonly due?: Due<P>;
}

/** A receiver that runs a function (a handler). */
export interface HandlerReceiverOptions<P> extends CommonReceiverOptions, ScheduleOptions<P> {
  /**
   * The function that receives the event. Durable handlers run in the relay inside a
   * transaction that also carries the acknowledgement (`context.transaction`), so work
   * done in the same database is effectively once.
   */
  readonly handle: Handler<P>;
  readonly deliver?: never;
}

/** A receiver that forwards events through a transport (Kafka, a webhook, your own). */
export interface DeliveryReceiverOptions<P = unknown>
  extends CommonReceiverOptions,
    ScheduleOptions<P> {
  /**
   * The transport: an {@link OutboxDelivery} or a plain async function of one event. It
   * sends outside any transaction; the outcomes of a batch are recorded in one statement.
   */
  readonly deliver:
    | OutboxDelivery
    | ((event: OutboxEvent, context: DeliveryContext) => Promise<unknown>);
  readonly handle?: never;
}

/** The options of {@link receiver}. */
export type ReceiverOptions<P> = HandlerReceiverOptions<P> | DeliveryReceiverOptions<P>;

/**
 * A topic pattern: every event whose name starts with the text before the final `*`
 * (`'library.*'` is `library.BookAdded`, `library.LoanEnded`, …). `_` and `%` are plain
 * characters; a `*` or `?` anywhere else is refused.
 */
export type TopicPattern = `${string}*`;

/**
 * What a receiver listens to: an event's name, its definition (typed), a
 * {@link TopicPattern}, or {@link AnyEvent}. A pattern or `AnyEvent` declares a wildcard.
 */
export type EventRef = string | EventDefinition | AnyEvent;

/** A declared receiver. Build it with {@link receiver}; register it in `defineOutbox({ receivers })`. */
export interface ReceiverDefinition<P = unknown> {
  readonly [RECEIVER]: true;
  readonly event: EventRef;
  readonly options: ReceiverOptions<P>;
}

/**
 * The decoded payload type a receiver of an event reference is handed.
 *
 * - an `event(...)` definition: its schema's output type;
 * - {@link AnyEvent} or a {@link TopicPattern}: `unknown`, honestly, since a wildcard is
 *   handed whatever was fired;
 * - a name (a string): `never`, so a handler of any payload type is accepted here and the
 *   check is left to `npx outbox codegen`, which resolves the name and type-checks the
 *   handler against the event's payload (and generates `Handlers` types to annotate with).
 *   Pass the definition instead of the name to have the compiler check it here.
 */
export type PayloadOf<R> =
  R extends EventDefinition<infer S extends z.ZodType>
    ? z.output<S>
    : R extends AnyEvent
      ? unknown
      : R extends TopicPattern
        ? unknown
        : never;

/**
 * Declare a receiver of one event (or of every event, with {@link AnyEvent}).
 *
 * Pass the event's definition rather than its name to have the handler's payload typed;
 * `npx outbox codegen` types the string form too. Everything is checked by
 * `defineOutbox`, which knows the receiver's key and so can name it in an error.
 *
 * @example
 * ```ts
 * receivers: {
 *   'mail.orderConfirmation': receiver(OrderPlaced, { handle: async (e) => sendMail(e.payload) }),
 * }
 * ```
 */
export function receiver<const R extends EventRef>(
  event: R,
  options: ReceiverOptions<PayloadOf<R>>,
): ReceiverDefinition<PayloadOf<R>> {
  return { [RECEIVER]: true, event, options };
}

/** Whether a value was built by {@link receiver}. */
export function isReceiverDefinition(value: unknown): value is ReceiverDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[RECEIVER] === true
  );
}
