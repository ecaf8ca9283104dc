import type { Transaction } from 'sequelize';
import type { EventRoute } from '../declare/define-outbox.js';
import type { EventColumnValue } from '../declare/event-columns.js';
import type { JsonValue, OutboxEvent } from '../declare/types.js';
import type { SuppressionVerdict } from '../scope/suppressed.js';
import type { DeliveryRowInput, EventRowInput } from '../storage/store.js';

/** Options of `outbox.fire()`. */
export interface FireOptions {
  /**
   * The transaction of the change this event reports: the event commits with it or not at
   * all. Without it, the transaction Sequelize's CLS carries is used (if the app enabled
   * CLS); with neither, the event commits at once on its own. A savepoint (a transaction
   * made with `{ transaction: outer }`) works too: the event commits with the outermost
   * transaction, and onCommit receivers and the wakeup wait for that. `null` commits the
   * event on its own even inside a CLS transaction (as Sequelize's `transaction: null`).
   * A CLS transaction of another Sequelize instance than the outbox's is never joined:
   * `fire()` refuses it with a `ConfigurationError` naming both.
   */
  readonly transaction?: Transaction | null;
  /**
   * At most one event ever exists per key. A repeat returns the stored event (its own
   * payload) and writes nothing — no error, no duplicate, no wakeup, and never an aborted
   * PostgreSQL transaction — so retrying a handler or re-running a job is safe.
   */
  readonly idempotencyKey?: string;
  /** Events of one ordering key are delivered to each receiver strictly in order. */
  readonly orderingKey?: string;
  /**
   * Metadata besides the payload (a trace context, the author); names must be non-empty,
   * values follow the payload's JSON rules (see `encodeJson`). The data of a surrounding
   * `attributed()` block joins them as `outbox-scope-<name>`; a header named here wins.
   */
  readonly headers?: Readonly<Record<string, JsonValue>>;
  /**
   * When the thing reported happened, the domain's own time.
   * @defaultValue now
   */
  readonly occurredAt?: Date;
  /**
   * `false`: signal no wakeup for this call — no signal after commit, and no NOTIFY in the
   * write (`listenNotifyWakeup`). For a bulk import or a backfill whose events may wait
   * for the relays' next poll (`settings.pollIntervalMs`): the rows are owed exactly as
   * always, only the latency changes, and the other writes of the same transaction still
   * signal their own.
   * @defaultValue true
   */
  readonly wakeup?: boolean;
  /**
   * The tenant the event belongs to, on an outbox with `settings.tenancy: 'column'` or
   * `'schema'` (where it also picks the schema the event is written to, and is required):
   * its idempotency and ordering keys are unique and ordered per tenant, and each delivery's
   * `context.tenant` names it. Without it, the tenant of the `withTenant()` block around the
   * call (or of the event whose receiver fires it); `null` names none even inside a block.
   * Refused by an outbox without tenancy.
   * @defaultValue the scope's tenant, else none
   */
  readonly tenant?: string | null;
  /**
   * The event's own columns (`defineOutbox({ eventColumns })`, the reference's
   * `extra_field_values`): what the event is about, e.g. `{ order_id: 42 }`, written with
   * the event and carried on each delivery's `event.columns`; an operation finds the events
   * by them (`{ columns: { order_id: 42 } }`). Each name must be declared and each value of
   * its column's type (or `null`), checked before anything is written.
   * @defaultValue none: every column NULL
   */
  readonly columns?: Readonly<Record<string, EventColumnValue>>;
}

/** Options of `outbox.fireMany()`: the call's, not one message's. */
export interface FireManyOptions {
  /** As {@link FireOptions.transaction}. */
  readonly transaction?: Transaction | null;
  /** As {@link FireOptions.wakeup}: `false` signals no wakeup for any event of the call. */
  readonly wakeup?: boolean;
}

/** One event of `outbox.fireMany()`. */
export interface FireMessage<N extends string = string, P = unknown>
  extends Omit<FireOptions, 'transaction' | 'wakeup'> {
  /** The event's name, as declared in `defineOutbox({ events })`. */
  readonly name: N;
  /** The payload, checked against the event's schema. */
  readonly payload: P;
}

/**
 * What `fire()` returns: the recorded event, whether this call wrote it, and whether a
 * `suppressed()` block silenced it.
 *
 * The same type for every outcome, so the typed emitters keep one return type: a
 * suppressed event that was recorded is a whole event (`suppressed` says why nobody is
 * owed it); one discarded by `record: false` has `recorded: false`, and `id` and
 * `sequence` blank (`''`), since no row exists to name.
 */
export type FiredEvent<P = unknown> = OutboxEvent<P> & {
  /** True when an event with the same idempotency key already existed; nothing was written. */
  readonly duplicate: boolean;
  /**
   * The reason of the `suppressed()` block that silenced this event in this call, or
   * `null`. (A duplicate reports `null`: this call wrote nothing, and suppressed nothing.)
   */
  readonly suppressed: string | null;
  /** False when `suppressed(…, { record: false })` discarded the event: nothing was written. */
  readonly recorded: boolean;
};

/** Step 1's value: one message validated and encoded, not yet owed to anyone. */
export interface PreparedEvent {
  readonly route: EventRoute;
  /** The event row, payload and headers encoded. */
  readonly row: Omit<EventRowInput, 'deliveries'>;
  /** The payload as its schema parsed it: what receivers of this call see. */
  readonly payload: unknown;
  readonly headers: Record<string, JsonValue>;
  /**
   * The verdict of the `suppressed()` blocks around the call, or null. A suppressed event's
   * `route` owes nothing (no receivers), and with `record: false` it is not written.
   */
  readonly suppression: SuppressionVerdict | null;
  /** Every declared column's value as receivers see it (null where unset); absent for none declared. */
  readonly columnView?: Readonly<Record<string, EventColumnValue>>;
}

/** Step 2's value: a prepared event with the delivery rows it owes. */
export interface PlannedEvent extends PreparedEvent {
  readonly deliveries: readonly DeliveryRowInput[];
}
