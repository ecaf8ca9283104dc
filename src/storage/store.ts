import type { Transaction } from 'sequelize';
import type { EventColumnValue, ResolvedEventColumn } from '../declare/event-columns.js';
import type { DeliveryStatus } from '../declare/types.js';

/** One event row to write. Payload and headers are already encoded JSON text. */
export interface EventRowInput {
  readonly uuid: string;
  readonly name: string;
  readonly version: number;
  readonly payload: string;
  readonly headers: string;
  readonly orderingKey: string | null;
  readonly idempotencyKey: string | null;
  readonly occurredAt: Date;
  readonly recordedAt: Date;
  readonly retentionSeconds: number | null;
  readonly deleteWhen: string | null;
  /** Who caused the event (the attribution scope's actor key), or null. */
  readonly actor: string | null;
  /** The chain's correlation id: the request's, inherited by every event fired in reaction. */
  readonly correlationId: string | null;
  /** The sequence of the event whose receiver fired this one, or null. */
  readonly causedBy: string | null;
  /** Why the event was recorded without deliveries (`suppressed`), or null. */
  readonly suppressedReason: string | null;
  /**
   * The event's tenant (`settings.tenancy: 'column'`), or null. Its idempotency and
   * ordering keys above are already in their stored form for it (`scopedKey`). Absent:
   * none.
   */
  readonly tenant?: string | null;
  /**
   * The values of the event's own columns (`defineOutbox({ eventColumns })`) by column name,
   * checked and bound as `SqlDialect.value` takes them (src/event-columns/values.ts); a
   * declared column not named is written NULL. Written in the event's INSERT, by a store
   * made with those columns declared (`StoreOptions.eventColumns`); absent: none.
   */
  readonly columnValues?: Readonly<Record<string, string | number | boolean | Date | null>>;
  /** The delivery rows this event owes, written only if the event row is new. */
  readonly deliveries: readonly DeliveryRowInput[];
}

/** One delivery row to write for an event. */
export interface DeliveryRowInput {
  readonly receiverKey: string;
  readonly target: string;
  readonly maxAttempts: number;
  readonly availableAt: Date;
  /** A scheduled delivery's due time (equal to `availableAt`), or null for one owed at once. */
  readonly dueAt: Date | null;
}

/** What writing one event produced. */
export interface WrittenEvent {
  /** The event's sequence id. */
  readonly sequence: string;
  readonly uuid: string;
  /** False when an event with the same idempotency key already existed (nothing written). */
  readonly inserted: boolean;
}

/** A stored event row, undecoded. */
export interface StoredEvent {
  readonly sequence: string;
  readonly uuid: string;
  readonly name: string;
  readonly version: number;
  readonly payload: unknown;
  readonly headers: unknown;
  readonly orderingKey: string | null;
  readonly idempotencyKey: string | null;
  readonly occurredAt: Date;
  readonly recordedAt: Date;
  readonly actor: string | null;
  readonly correlationId: string | null;
  /** The parent event's sequence, or null. */
  readonly causedBy: string | null;
  /** The event's tenant, or null; its keys above are as given (the tenant's prefix stripped). */
  readonly tenant: string | null;
  /**
   * The declared event columns (`eventColumns`), read apart from the event row (never by the
   * claim's own statement) where the outbox declares some; absent where it declares none.
   */
  readonly columns?: Readonly<Record<string, EventColumnValue>>;
}

/** Identifies one claim: who took the rows, and when (on the real clock). */
export interface ClaimToken {
  readonly workerId: string;
  readonly claimedAt: Date;
}

/** A claimed delivery, with its event. */
export interface ClaimedDelivery {
  readonly id: string;
  readonly receiverKey: string;
  readonly target: string;
  /** Attempts already spent before this one. */
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly dueAt: Date | null;
  readonly event: StoredEvent;
}

/** What to claim. */
export interface ClaimOptions {
  readonly token: ClaimToken;
  /** The moment the claim is read against: what is due, which lease has lapsed. */
  readonly now: Date;
  readonly leaseUntil: Date;
  readonly limit: number;
  /** Claim rows still waiting out a retry backoff (the test harness). */
  readonly ignoreBackoff?: boolean;
  /** Leave these delivery ids out. */
  readonly excludeIds?: readonly string[];
  /** Claim only among these delivery ids (`deliverOne`); every other condition still holds. */
  readonly onlyIds?: readonly string[];
  /**
   * Claim only rows of these receiver keys (a named lane is the keys of its receivers).
   * Empty claims nothing. Applied to the whole owed condition, available rows and lapsed
   * claims alike, so a relay never takes over another lane's lapsed claims.
   */
  readonly receiverKeys?: readonly string[];
  /**
   * Leave out rows of these receiver keys (the default lane: every key no named lane
   * takes, so rows of a receiver since deleted stay in it). Empty adds nothing.
   */
  readonly excludeReceiverKeys?: readonly string[];
  /**
   * Claim only rows whose event's topic (its name) is one of these: names, and prefix
   * patterns ending in one `*` (`'library.*'`), whose `_` and `%` are plain characters.
   * Empty claims nothing. Patterns must have passed `topicPatternProblem`.
   */
  readonly topics?: readonly string[];
  /** Leave out rows whose event's topic is one of these (names and prefix patterns). */
  readonly excludeTopics?: readonly string[];
  /**
   * Claim only rows whose event belongs to one of these tenants (never an event without a
   * tenant). Empty claims nothing.
   */
  readonly tenants?: readonly string[];
  /** Leave out rows whose event belongs to one of these tenants (events without one stay). */
  readonly excludeTenants?: readonly string[];
  /** Claim only rows of these event sequences (an `eager` attempt of just-committed events). */
  readonly onlyEvents?: readonly string[];
}

/** The recorded outcome of one attempt. */
export interface Outcome {
  readonly id: string;
  readonly status: Extract<
    DeliveryStatus,
    'succeeded' | 'failed' | 'dead' | 'orphaned' | 'pending'
  >;
  /** Attempts spent after this one. */
  readonly attempts: number;
  /** When the row may be claimed again (failed / pending rows). */
  readonly availableAt: Date | null;
  /** Set with `pending` for a NotYet: the row's new due time. */
  readonly dueAt?: Date | null;
  readonly lastError: string | null;
  readonly completedAt: Date | null;
}

/** A row of the log, for `assertFired` and reports. */
export interface DeliveryCounts {
  readonly [status: string]: number;
}

/**
 * What a dialect can do, as data: the relay, the CLI and fire ask these, never the
 * dialect's name (pg-boss' `dialect.ts`, BullMQ's optional features as data). Derived from
 * the dialect registry's `DatabaseCapabilities` (`storeCapabilities`, `dialect-entry.ts`).
 */
export interface DialectCapabilities {
  /** Whether two relays can split the queue (row locks with SKIP LOCKED). */
  readonly splitsQueue: boolean;
  /**
   * How many transactions may write at once: `'one'` (SQLite) runs a relay's handlers one
   * at a time and allows one relay (the single-writer lock); `'many'` runs `concurrency`.
   */
  readonly writers: 'one' | 'many';
  /**
   * The options a handler's transaction is opened with: SQLite takes its write lock up
   * front (`IMMEDIATE`), so two writers queue on the busy timeout instead of one failing
   * with SQLITE_BUSY at its first write.
   */
  readonly handlerTransaction: { readonly type?: 'DEFERRED' | 'IMMEDIATE' | 'EXCLUSIVE' };
  /** Whether `fire()`'s own statement sends the LISTEN/NOTIFY wakeup (PostgreSQL). */
  readonly notifiesInWrite: boolean;
}

/** How one `insertEvents` call writes, beside its rows. */
export interface InsertOptions {
  /**
   * `false`: queue no LISTEN/NOTIFY wakeup in this write, although the store has a channel
   * (`fire(…, { wakeup: false })`, or a write folded into an earlier NOTIFY by the
   * wakeup's `notifyCoalesceMs`). A store without a channel ignores it.
   * @defaultValue true
   */
  readonly notify?: boolean;
}

/** The event log: writes events (with the delivery rows they owe) and reads them back. */
export interface EventLog {
  /**
   * Write events and their delivery rows in the caller's transaction. Events with an
   * idempotency key that already exists write nothing and return the stored event.
   * Returns one entry per input, in input order.
   */
  insertEvents(
    events: readonly EventRowInput[],
    transaction: Transaction,
    options?: InsertOptions,
  ): Promise<WrittenEvent[]>;
  /** Read events (by sequence order), optionally of one name; inside `transaction` if given. */
  readEvents(
    filter: { name?: string; sequences?: readonly string[] },
    transaction?: Transaction,
  ): Promise<StoredEvent[]>;
}

/**
 * The delivery queue: what the relay asks while it works.
 *
 * INVARIANT: every write that settles a claimed row is a compare-and-set on the claim
 * token, so a worker whose lease lapsed never overwrites the verdict of whoever took the
 * row after it.
 */
export interface DeliveryQueue {
  /** Claim up to `limit` owed deliveries; see {@link ClaimOptions}. */
  claim(options: ClaimOptions): Promise<ClaimedDelivery[]>;
  /** Extend the lease of rows still held under `token`. Returns how many were. */
  renewLeases(ids: readonly string[], token: ClaimToken, leaseUntil: Date): Promise<number>;
  /**
   * The take under a claim (a task worker's `deliverOne(id, { claimedBy, claimedAt })`):
   * ONE conditional update, committed before anything else runs, that moves row `id` from
   * the claim `from` (the one it was handed to a task queue under) to the claim `to`,
   * leased until `leaseUntil`, only while it is still claimed under exactly `from` and its
   * lease has not lapsed at `now`; then the row read back with its event. `undefined` when
   * the take failed: a second copy of the task, a copy held past its lease, or a copy for a
   * row that has since settled or been reclaimed.
   */
  takeClaim(
    id: string,
    from: ClaimToken,
    to: ClaimToken,
    leaseUntil: Date,
    now: Date,
  ): Promise<ClaimedDelivery | undefined>;
  /**
   * Hand unstarted rows back, claimable by any worker at once: each returns to the status
   * it had before the claim (`failed` if it has spent attempts, else `pending`), available
   * no later than `now`. Only rows still held under `token` change.
   */
  release(ids: readonly string[], token: ClaimToken, now: Date): Promise<number>;
  /**
   * Record many outcomes in one statement; only rows still held under `token` change. The
   * successes among them are stamped with one completion time, the latest of theirs
   * (sql/batch-completion.ts).
   */
  recordOutcomes(outcomes: readonly Outcome[], token: ClaimToken): Promise<number>;
  /** Mark one row succeeded inside `transaction` (a handler's); false if the claim was lost. */
  acknowledge(
    id: string,
    token: ClaimToken,
    completedAt: Date,
    transaction: Transaction,
  ): Promise<boolean>;
  /**
   * Run a handler's `work` in a transaction of its own and acknowledge the row in it, so
   * the work and the acknowledgement commit together or not at all.
   *
   * Resolves `'acknowledged'` once the COMMIT succeeded (the transaction's `afterCommit`
   * hooks have run), `'lost'` when the compare-and-set found the claim gone (the work was
   * rolled back). Rejects with the work's error (rolled back), or the database's (the
   * transaction could not begin, or the COMMIT failed or went unanswered).
   */
  handleAndAcknowledge(
    work: (transaction: Transaction) => Promise<void>,
    ack: AcknowledgeRequest,
  ): Promise<'acknowledged' | 'lost'>;
}

/** Which row a handler's transaction acknowledges, and when. */
export interface AcknowledgeRequest {
  readonly id: string;
  readonly token: ClaimToken;
  /** The completion time, read once the work is done. */
  readonly at: () => Date;
  /** Told of a transaction `afterCommit` hook that threw after the COMMIT (which stands). */
  readonly afterCommitFailed?: (error: unknown) => void;
}

/** Maintenance: counts and reads now; prune, replay, cancel, requeue and health later. */
export interface Maintenance {
  /** Count deliveries by status. */
  countDeliveries(): Promise<Record<DeliveryStatus, number>>;
  /** Read delivery rows of an event (tests and operations). */
  readDeliveries(filter: { eventSequence?: string }): Promise<DeliveryRow[]>;
  /**
   * The backlog at `now`, one entry per receiver key with anything owed, scheduled or
   * dead (`outbox.health()`); served by the owed and dead rows' indexes, never by history.
   * With a tenant, only the rows of its events (each read through the events' primary key).
   */
  readBacklog(
    now: Date,
    filter?: {
      readonly tenant?: string;
      /** Only the rows of these events (sequences; an empty list: none): `health({ columns })`. */
      readonly events?: readonly string[];
    },
  ): Promise<BacklogRow[]>;
  /**
   * Each of these receiver keys with its newest success, from its live rows and from the
   * last-success table the prune keeps (`outbox.quietReceivers()`); one entry per key.
   */
  readLastSucceeded(receiverKeys: readonly string[]): Promise<LastSucceededRow[]>;

  // --- The operator's operations on rows (src/ops/: cancel, replay, requeue, dead letters).
  // Each write runs inside `transaction`, after `lockEvents` took its events' locks.
  /**
   * Lock the events named by uuid, by sequence, or as the events of these delivery ids, in
   * primary-key order (PostgreSQL `FOR UPDATE`, see postgres/event-locks.ts; SQLite's write
   * transaction is the one writer), and return them in that order. Ids naming no event are
   * left out. The lock cancel, replay, requeue and prune share: take it first.
   */
  lockEvents(ids: EventLockSelection, transaction: Transaction): Promise<LockedEvent[]>;
  /**
   * Withdraw the pending and failed rows of these events (narrowed by receiver and row ids)
   * as `cancelled`, completed at `completedAt`; count the claimed rows of the same scope.
   */
  cancelDeliveries(
    scope: CancelScope,
    completedAt: Date,
    transaction: Transaction,
  ): Promise<{ cancelled: number; inFlight: number }>;
  /** Every delivery row of these events, by event and id, read in `transaction`. */
  readDeliveriesOfEvents(
    sequences: readonly string[],
    transaction: Transaction,
  ): Promise<DeliveryRow[]>;
  /** Reopen settled rows as pending, attempts zero, owed from their own times; returns how many. */
  reopenDeliveries(rows: readonly Reopening[], transaction: Transaction): Promise<number>;
  /** Add delivery rows (a replay's); returns how many. */
  addDeliveries(rows: readonly Addition[], transaction: Transaction): Promise<number>;
  /** The ids of up to `limit` dead rows of a filter, oldest event first. */
  deadDeliveryIds(filter: DeadFilter, limit: number, transaction: Transaction): Promise<string[]>;
  /** How many dead rows a filter finds, at most `limit` (`requeueDead({ dryRun })`). */
  countDeadDeliveries(filter: DeadFilter, limit: number): Promise<number>;
  /** Requeue these rows if still dead: pending, attempts zero, owed from `now`; returns how many. */
  requeueDeliveries(ids: readonly string[], now: Date, transaction: Transaction): Promise<number>;
  /**
   * Queue the LISTEN/NOTIFY wakeup for these topics in `transaction` (one NOTIFY per
   * topic, sent by the server when it commits, never for a rollback), for an operation
   * that makes rows owed (replay, requeue). Only a store that notifies in its write has it
   * (PostgreSQL with a `notifyInWrite` wakeup); it does nothing without a channel.
   */
  notifyInTransaction?(topics: readonly string[], transaction: Transaction): Promise<void>;
  /** Dead letters, newest first, with their errors and events. */
  readDeadLetters(filter: {
    receiverKey?: string;
    limit: number;
    /** Only this tenant's dead letters. */
    tenant?: string;
    /** Only the dead letters of these events (sequences); an empty list: none. */
    events?: readonly string[];
  }): Promise<DeadLetterRow[]>;

  // Prune and cleanup (issue 9): see storage/sql/prune.ts for the due rules and indexes.
  /** Up to `limit` events due under `window`, by sequence, with their delivery row counts. */
  findDueEvents(window: PruneWindow, limit: number): Promise<DueEvent[]>;
  /** How many events (and their delivery rows) are due under `window`; deletes nothing. */
  countDueEvents(window: PruneWindow): Promise<PruneCounts>;
  /**
   * In one transaction: lock the events (primary-key order), re-check which are still due,
   * write each receiver's newest success among their rows to the last-success table, and
   * delete them with their delivery rows. Returns what went.
   */
  deleteDueEvents(sequences: readonly string[], window: PruneWindow): Promise<PruneCounts>;
  /**
   * In a transaction of its own: up to `limit` delivery rows of one still-due event, their
   * last successes recorded; the event row stays. Returns how many went (0: not due).
   */
  deleteDueDeliveries(sequence: string, limit: number, window: PruneWindow): Promise<number>;
  /** Up to `limit` dead rows completed before `before`, oldest first. Returns how many. */
  deleteDeadDeliveries(before: Date, limit: number): Promise<number>;
}

/** Which events `lockEvents` locks: by uuid, by sequence, or the events of these delivery ids. */
export type EventLockSelection =
  | { readonly uuids: readonly string[] }
  | { readonly sequences: readonly string[] }
  | { readonly deliveryIds: readonly string[] };

/** An event an operation locked: its sequence, uuid and name (its topic). */
export interface LockedEvent {
  readonly sequence: string;
  readonly uuid: string;
  /** The event's name: the topic a wakeup names once the operation commits. */
  readonly name: string;
  /** The event's tenant, or null: what an operation narrowed by tenant checks. */
  readonly tenant?: string | null;
}

/** The rows a cancel may withdraw. */
export interface CancelScope {
  /** The events' sequences (locked first). */
  readonly eventSequences: readonly string[];
  /** Only this receiver's rows, or every receiver's. */
  readonly receiverKey?: string;
  /** Only these rows among the events' (intersected, never widened); an empty list: none. */
  readonly deliveryIds?: readonly string[];
}

/** A dead letter as stored, with its event's identity. */
export interface DeadLetterRow {
  readonly id: string;
  readonly eventSequence: string;
  readonly eventUuid: string;
  readonly eventName: string;
  readonly eventRecordedAt: Date;
  readonly receiverKey: string;
  readonly target: string;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly lastError: string | null;
  /** When it was dead-lettered. */
  readonly completedAt: Date | null;
  /** The event's tenant, or null. */
  readonly eventTenant?: string | null;
}

/** What a prune pass reads due against. */
export interface PruneWindow {
  /** `retention`: pruneEvents' three rules; `published`: cleanupPublished's. */
  readonly rule: 'retention' | 'published';
  /** The moment windows of their own are read against. */
  readonly now: Date;
  /** The ordinary window's end: an event recorded at or before it is past it. */
  readonly cutoff: Date;
  /**
   * Only this tenant's events (`pruneEvents({ tenant })`). The re-check at the delete
   * needs no tenant: the events it is handed were found among the tenant's.
   */
  readonly tenant?: string;
  /**
   * Only these events (sequences; an empty list: none): `pruneEvents({ columns })`, resolved
   * to the events holding the values. The re-check at the delete needs no list either.
   */
  readonly events?: readonly string[];
}

/** An event due for deletion and how many delivery rows go with it. */
export interface DueEvent {
  readonly sequence: string;
  readonly deliveries: number;
}

/** Events and delivery rows, deleted or due. */
export interface PruneCounts {
  readonly events: number;
  readonly deliveries: number;
}

/** Who holds the single-writer relay lock, and until when. */
export interface RelayLockHolder {
  readonly holder: string;
  readonly leaseUntil: Date;
}

/**
 * The single-relay lock of a dialect that cannot split the queue (SQLite): a leased row,
 * so a relay killed with -9 holds it only until its lease lapses.
 */
export interface SingleWriterLock {
  /** Take or renew the lock for `holder` until `until`; false if another live relay holds it. */
  acquire(holder: string, now: Date, until: Date): Promise<boolean>;
  /** Who holds the lock now (for a refusal that says when it lapses); undefined if nobody. */
  current(): Promise<RelayLockHolder | undefined>;
  /** Give the lock up (only if `holder` holds it). */
  release(holder: string): Promise<void>;
}

/**
 * Everything the outbox asks of a database, by role. One implementation per dialect, each
 * writing only what really differs; shared SQL fragments live in `storage/sql/`. The
 * conformance suite (`test/storage/store-conformance.test.ts`) holds every implementation
 * to the same behaviour, role by role.
 */
export interface OutboxStore extends EventLog, DeliveryQueue, Maintenance, EventColumnStore {
  /** The dialect's name, for messages only: decisions read {@link capabilities}. */
  readonly dialect: string;
  readonly capabilities: DialectCapabilities;
  /** Create or upgrade the tables; idempotent and safe when run by two processes at once. */
  migrate(): Promise<void>;
  /** Present when the dialect cannot split the queue: the one-relay-at-a-time lock. */
  readonly relayLock: SingleWriterLock | undefined;
}

/**
 * The application's own columns of the events table (`defineOutbox({ eventColumns })`,
 * sql/event-columns.ts). Asked only by an outbox that declares some: the claim, the insert
 * and the operations' statements of one that declares none are unchanged. Their values are
 * written by the insert itself (`EventRowInput.columnValues`, a store made with
 * `StoreOptions.eventColumns`), not through this role.
 */
export interface EventColumnStore {
  /** What the events table has: its columns (types lower-cased, as the database names them) and index names. */
  describeEventsTable(): Promise<{
    readonly columns: readonly TableColumn[];
    readonly indexes: readonly string[];
  }>;
  /** The statements that add the columns and build the indexes `add` and `index` name, in one transaction where DDL has one. */
  addEventColumns(
    add: readonly ResolvedEventColumn[],
    index: readonly ResolvedEventColumn[],
  ): Promise<void>;
  /** The statements {@link addEventColumns} would run, as text (`outbox migrate --print-sql`). */
  eventColumnStatements(
    add: readonly ResolvedEventColumn[],
    index: readonly ResolvedEventColumn[],
  ): string[];
  /** The declared columns of events, by sequence: each value as the driver returned it. */
  readEventColumns(
    sequences: readonly string[],
    columns: readonly ResolvedEventColumn[],
    transaction?: Transaction,
  ): Promise<Map<string, Record<string, unknown>>>;
  /** The sequences of the events whose columns equal the values given (null: none), oldest first. */
  eventsWithColumns(
    equal: readonly { readonly column: ResolvedEventColumn; readonly value: unknown }[],
  ): Promise<string[]>;
}

/** A column of the events table as the database describes it. */
export interface TableColumn {
  readonly name: string;
  /** The database's own type name (`bigint`, `timestamp with time zone`, `BIGINT` …), lower-cased. */
  readonly type: string;
}

/** A delivery row as stored. */
export interface DeliveryRow {
  readonly id: string;
  readonly eventSequence: string;
  readonly receiverKey: string;
  readonly target: string;
  readonly status: DeliveryStatus;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly availableAt: Date;
  readonly dueAt: Date | null;
  readonly claimedBy: string | null;
  readonly leaseUntil: Date | null;
  readonly lastError: string | null;
  readonly completedAt: Date | null;
  readonly succeededAt: Date | null;
}

/** One receiver's backlog, as {@link Maintenance.readBacklog} reads it. */
export interface BacklogRow {
  readonly receiverKey: string;
  /** Pending, failed or claimed, with the due time come. */
  readonly owed: number;
  /** The earliest `due_at` of the owed rows, else their event's `recorded_at`; null if none. */
  readonly oldestOwedAt: Date | null;
  /** Pending, failed or claimed with the due time still ahead. */
  readonly scheduled: number;
  /** The owed rows a worker holds. */
  readonly claimed: number;
  /** Claimed rows whose lease has ended. */
  readonly lapsed: number;
  readonly dead: number;
}

/** One receiver key's newest success, as {@link Maintenance.readLastSucceeded} reads it. */
export interface LastSucceededRow {
  readonly receiverKey: string;
  /** The newest `succeeded_at` of its delivery rows, or null. */
  readonly live: Date | null;
  /** What the last-success table keeps for it (written by the prune), or null. */
  readonly kept: Date | null;
}

/** One row a replay reopens, with the times it is owed from. */
export interface Reopening {
  readonly id: string;
  readonly availableAt: Date;
  readonly dueAt: Date;
}

/** One delivery row a replay adds for a receiver (or a target) the event has none for. */
export interface Addition {
  readonly eventSequence: string;
  /** The event's ordering key, copied for the claim's ordering check (as fire copies it). */
  readonly orderingKey: string | null;
  readonly receiverKey: string;
  readonly target: string;
  readonly maxAttempts: number;
  readonly availableAt: Date;
  readonly dueAt: Date;
}

/** What selects the dead rows a requeue gives back their budget. */
export interface DeadFilter {
  /** Only rows of this receiver, or every receiver's when undefined. */
  readonly receiverKey?: string;
  /** Only these delivery ids (an empty list: none), or any when undefined. */
  readonly deliveryIds?: readonly string[];
  /** Only rows whose event's topic is one of these names or `prefix*` patterns. */
  readonly topics?: readonly string[];
  /** Only rows whose event belongs to one of these tenants (an empty list: none). */
  readonly tenants?: readonly string[];
  /**
   * Only rows of these events (sequences; an empty list: none): an operation's `columns`,
   * resolved to the events that hold them.
   */
  readonly events?: readonly string[];
}
