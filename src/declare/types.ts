import type { Transaction } from 'sequelize';
import type { z } from 'zod';
import type { EventColumnValue } from './event-columns.js';

/** A JSON value as it is stored in the payload and headers columns. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/**
 * When a receiver runs relative to the firing transaction.
 *
 * - `durable` (the default): after commit, at least once, retried, with a delivery row
 *   recording the debt. The only mode that survives a crash.
 * - `inline`: inside `fire()`'s transaction, and free to abort it by throwing. Needs no
 *   durability: its failure mode is a rollback, so nothing can be owed.
 * - `onCommit`: after commit, in the firing process, best effort. A throw is logged, never
 *   raised, and nothing retries it.
 */
export type DeliveryMode = 'durable' | 'inline' | 'onCommit';

/**
 * The status of one delivery row: an event owed to one durable receiver (and target).
 *
 * `failed` is distinct from `pending` so that "has this ever failed" is answerable
 * without reading the attempt count; `dead` rows are no longer tried and hold back the
 * later events of their ordering key; `orphaned` rows name a receiver the config no
 * longer declares.
 */
export type DeliveryStatus =
  | 'pending'
  | 'claimed'
  | 'succeeded'
  | 'failed'
  | 'dead'
  | 'orphaned'
  | 'cancelled';

/** Every delivery status, in the order reports list them. */
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = [
  'pending',
  'claimed',
  'succeeded',
  'failed',
  'dead',
  'orphaned',
  'cancelled',
];

/** A count for every delivery status, all zero: the start of every report. */
export function zeroCounts(): Record<DeliveryStatus, number> {
  return { pending: 0, claimed: 0, succeeded: 0, failed: 0, dead: 0, orphaned: 0, cancelled: 0 };
}

/**
 * Declares a receiver for every event (a wildcard). Meant for transports that forward
 * events without knowing what they are; matched when an event is fired, so it also
 * receives events declared after it.
 */
export const AnyEvent: unique symbol = Symbol.for('outboxkit.AnyEvent');
/** The type of {@link AnyEvent}. */
export type AnyEvent = typeof AnyEvent;

/** A recorded event, as receivers, deliveries and `assertFired` see it. */
export interface OutboxEvent<P = unknown> {
  /** The event's UUIDv7: what receivers deduplicate on (sent as the `outbox-event-id` header). */
  readonly id: string;
  /** The event row's sequence number, the delivery order, as a decimal string (a bigint). */
  readonly sequence: string;
  /** The declared event name, which is also its topic, e.g. `shop.OrderPlaced`. */
  readonly name: string;
  /**
   * The schema version of `payload` as handed over: the version the row was written with,
   * except after the event's `upgrade` brought an older row to the declared version — then
   * the declared one, since that is the shape the payload now has.
   */
  readonly version: number;
  /** The decoded payload. */
  readonly payload: P;
  /** Metadata besides the payload (trace context, author), carried into broker headers. */
  readonly headers: Readonly<Record<string, JsonValue>>;
  /** Events of one ordering key are delivered to each receiver strictly in order. */
  readonly orderingKey: string | null;
  /** The key that made this event unique, if it was fired with one. */
  readonly idempotencyKey: string | null;
  /** When the thing the event reports happened (the domain's own time). */
  readonly occurredAt: Date;
  /** When the event row was written. */
  readonly recordedAt: Date;
  /**
   * Who caused the event: the actor key of the `attributed()` block it was fired in
   * (`User:42`, `system:import`), or `null`.
   */
  readonly actor: string | null;
  /**
   * The chain's correlation id: the one `attributed()` set where the chain began or, with
   * none set, the UUID of the event that began it. Every event fired by a receiver of this
   * one carries it on, so one query finds the request and everything it set off, hours
   * later. `null` only on rows written before attribution was recorded.
   */
  readonly correlationId: string | null;
  /**
   * The sequence of the event whose receiver fired this one (one hop of causation), or
   * `null` for an event fired outside any receiver.
   */
  readonly causedBy: string | null;
  /**
   * The tenant the event belongs to (`settings.tenancy: 'column'`): the one `fire()` named
   * or the `withTenant()` block's; `null` for none. Absent only on an event built by hand.
   */
  readonly tenant?: string | null;
  /**
   * The event's own columns (`defineOutbox({ eventColumns })`): every declared column by
   * name, `null` where the event has none (`bigint` as a string, `timestamp` a Date).
   * Absent on an outbox that declares no column.
   */
  readonly columns?: Readonly<Record<string, EventColumnValue>>;
}

/**
 * Delivery metadata handed to a receiver next to the event.
 *
 * Frozen data read off the rows, never a live handle: a durable delivery can run in another
 * process hours after the code that fired it.
 */
export interface DeliveryContext {
  /** The key of the receiver this attempt is for. */
  readonly receiverKey: string;
  /** The delivery row's id, or `null` for `inline`/`onCommit` receivers, which have no row. */
  readonly deliveryId: string | null;
  /** Which attempt this is, counting from one (always 1 without a row). */
  readonly attempt: number;
  /** The fan-out target of this delivery; blank for a receiver without targets. */
  readonly target: string;
  /**
   * When this delivery became due. For a receiver declared with `due`, the due time its row
   * was written with (or the time a `NotYet` moved it to) — what a scheduled receiver
   * compares against: recompute the due time from current state and, if it has moved later
   * (`moved > max(dueAt, now)`), answer with `NotYet(moved)` rather than do the work early.
   * For any other row, when it became owed: its event's recording. `null` where no row
   * exists (`inline`/`onCommit` receivers, and the context `targets` is asked with).
   */
  readonly dueAt: Date | null;
  /**
   * The tenant of the event delivered (`settings.tenancy: 'column'`), or `null`: what a
   * handler scopes its own queries by. Absent only on a context built by hand.
   */
  readonly tenant?: string | null;
  /**
   * The transaction to do database work in. For a durable handler it is the transaction
   * that also records the acknowledgement, so work in the same database commits exactly
   * when the delivery is recorded done (effectively once). On PostgreSQL it takes its pool
   * connection with its first statement (read `transaction.connection` only by awaiting
   * it, as Sequelize does), so a handler that does no database work holds no connection
   * while it runs. For an `inline` receiver it is the firing transaction. Absent for
   * `onCommit` receivers and transports.
   */
  readonly transaction?: Transaction;
  /**
   * Aborted when this attempt must end: its time limit ran out (the reason is a
   * `DeliveryTimeout`) or the relay was told to stop. A handler passes it on to what it
   * awaits, so a timed-out handler stops querying a transaction that has been rolled back.
   */
  readonly signal?: AbortSignal;
}

/** A function receiving one event. Its return value is ignored; a throw is a failed attempt. */
export type Handler<P = unknown> = (
  event: OutboxEvent<P>,
  context: DeliveryContext,
) => unknown | Promise<unknown>;

/** One event of a transport's batch, with the delivery it is for. */
export interface DeliveryItem {
  /** The event to send. */
  readonly event: OutboxEvent;
  /** Its delivery's context: receiver, attempt, target, `signal`. */
  readonly context: DeliveryContext;
}

/**
 * What a transport says about one item of its batch.
 *
 * - `sent`: delivered; recorded succeeded.
 * - `failed`: not delivered; an ordinary failed attempt (a `PermanentFailure` as `error`
 *   dead-letters it at once).
 * - `retryAfter`: the destination said when to try again (a 429 with `Retry-After`);
 *   counted like `RetryAfter(seconds)`, or, with `counts: false`, a deferral like
 *   `RetryAfter(seconds, { counts: false })` (a throttle: no attempt spent, the lane paused).
 */
export type DeliveryResult =
  | { readonly status: 'sent' }
  | { readonly status: 'failed'; readonly error: unknown }
  | {
      readonly status: 'retryAfter';
      readonly seconds: number;
      readonly error?: unknown;
      /** `false`: a deferral, as `RetryAfter(seconds, { counts: false })`. @defaultValue true */
      readonly counts?: boolean;
    };

/** What every transport call is given besides its items. */
export interface DeliveryCallOptions {
  /**
   * Aborted when the attempt must end: its time limit ran out (reason: a
   * `DeliveryTimeout`) or the relay is stopping. Pass it to the client's send, so a
   * timed-out send is cancelled rather than only raced.
   */
  readonly signal: AbortSignal;
}

/**
 * A transport: sends events outside any transaction, a batch at a time (version 2 of the
 * seam).
 *
 * Implement `deliver` for one event at a time (the relay runs up to its `concurrency` at
 * once), or `deliverBatch` to send a whole batch in one call (a Kafka produce, a Redis
 * pipeline). `deliverBatch` resolves to one {@link DeliveryResult} per item, in item
 * order, or to nothing when every item went; a throw fails the whole batch. Either gets
 * one `AbortSignal` per attempt.
 *
 * `testing/` has a conformance suite (`transportConformance`) every transport runs.
 */
export interface OutboxDelivery {
  /** A name for logs and the catalogue. */
  readonly name?: string;
  /** Send one event; resolve when it went, throw (or reject) when it did not. */
  deliver?(event: OutboxEvent, context: DeliveryContext): Promise<void>;
  /** Send many events at once; see the interface docs for the result. */
  deliverBatch?(
    items: readonly DeliveryItem[],
    options: DeliveryCallOptions,
  ): Promise<readonly DeliveryResult[] | undefined>;
  /** Release connections; called when the outbox is closed. */
  close?(): Promise<void>;
}

/** What a receiver's `onFailure` hook is told about one failed attempt. */
export interface DeliveryFailure {
  /** The key of the receiver whose attempt failed. */
  readonly receiverKey: string;
  /** The delivery row's id: what `requeueDead({ deliveryIds })` and `deliverOne` take. */
  readonly deliveryId: string;
  /** The event's id (its UUID). */
  readonly eventId: string;
  /** The event's name (its topic). */
  readonly eventName: string;
  /** The fan-out target, or `''`. */
  readonly target: string;
  /** Which attempt failed, counting from one. */
  readonly attempt: number;
  /** `failed` while attempts remain, `dead` once the budget is spent or on `PermanentFailure`. */
  readonly status: 'failed' | 'dead';
  /** The message the relay stored. */
  readonly error: string;
}

/** The payload type (as the caller passes it) of an event definition. */
export type PayloadInput<D> = D extends { readonly schema: infer S extends z.ZodType }
  ? z.input<S>
  : never;
/** The payload type (as receivers see it, decoded) of an event definition. */
export type PayloadOutput<D> = D extends { readonly schema: infer S extends z.ZodType }
  ? z.output<S>
  : never;
