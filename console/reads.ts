/**
 * The console's own reads: the ones the operations' functions do not already make, each a
 * page (a keyset cursor, never an OFFSET) read through an index the relay and the
 * operations already keep. No statement here reads the history of settled rows: the first
 * page of a 1,000,000-event outbox costs what the first page of an empty one does
 * (`test/console/plans.test.ts` pins each statement's plan on PostgreSQL and SQLite;
 * `bench/console.ts` times the pages).
 *
 * The indexes (src/storage/sql/schema.ts, migration 4):
 * - dead letters: `deliveries_dead_letters (completed_at, id) WHERE phase dead`, read
 *   backwards; each letter's event by primary key; the row waiting behind it through
 *   `deliveries_ordering (receiver_key, target, ordering_key, event_id) WHERE holds back`;
 * - events, newest first: the events' primary key, read backwards;
 * - one event: the uuid's unique index; its parents (`caused_by`) by primary key; its
 *   delivery rows through `deliveries_queue` (owed) and `deliveries_settled` (the rest);
 * - an ordering key: its live rows (owed or dead: what holds the key) through
 *   `deliveries_ordering`, one probe per declared receiver. A key whose rows all settled
 *   has nothing holding it and no index names it: it is found by an event's id instead.
 */
import type { DeliveryStatus } from '../src/declare/types.js';
import type { Runtime } from '../src/runtime.js';
import { toDate, toDateOrNull } from '../src/storage/rows.js';
import type { SqlDialect } from '../src/storage/sql/dialect.js';
import type { TableNames } from '../src/storage/tables.js';

/** The event columns a page shows of an event. */
const EVENT_FIELDS = (e: string) =>
  `${e}.id AS event_sequence, ${e}.uuid AS event_uuid, ${e}.name AS event_name, ${e}.version AS event_version, ${e}.payload AS event_payload, ${e}.headers AS event_headers, ${e}.ordering_key AS event_ordering_key, ${e}.idempotency_key AS event_idempotency_key, ${e}.occurred_at AS event_occurred_at, ${e}.recorded_at AS event_recorded_at, ${e}.actor AS event_actor, ${e}.correlation_id AS event_correlation_id, ${e}.caused_by AS event_caused_by, ${e}.suppressed_reason AS event_suppressed_reason, ${e}.retention_seconds AS event_retention_seconds, ${e}.delete_when AS event_delete_when`;

/** The rows waiting behind dead letter `x` (same receiver, target and key, a later event). */
const behind = (t: TableNames, d: SqlDialect, select: string, tail = '') => `
          SELECT ${select} FROM ${t.deliveries} h
          WHERE h.receiver_key = x.receiver_key AND h.target = x.target
            AND h.ordering_key = x.ordering_key AND h.event_id > x.event_id
            AND h.ordering_key IS NOT NULL AND ${d.ddl.phase.holdsBack('h')}
            AND ${d.ddl.phase.owed('h')}${tail}`;

/** At most this many rows behind one dead letter are counted (then "at least"). */
export const BEHIND_COUNT_CAP = 1000;

/**
 * One page of dead letters, newest first: of receiver $1 (NULL: all), `after` the cursor
 * ($2 completed_at, $3 id; with no cursor both NULL), at most $4; each with its event
 * (primary key), and for one with an ordering key, the first owed row waiting behind it
 * (its id and event uuid) and how many wait, counted to $5. Reads deliveries_dead_letters
 * backwards, the events by primary key, deliveries_ordering per letter.
 */
export function deadLettersPageSql(t: TableNames, d: SqlDialect, after: boolean): string {
  const next = behind(t, d, 'h.event_id', ' ORDER BY h.event_id LIMIT 1');
  return `
    SELECT x.id, x.receiver_key, x.target, x.attempts, x.max_attempts, x.last_error,
           x.completed_at, x.ordering_key,
           e.id AS event_sequence, e.uuid AS event_uuid, e.name AS event_name,
           e.recorded_at AS event_recorded_at,
           (${behind(t, d, 'h.id', ' ORDER BY h.event_id LIMIT 1')}) AS behind_id,
           (SELECT b.uuid FROM ${t.events} b WHERE b.id = (${next})) AS behind_event_uuid,
           ${d.countUpTo(behind(t, d, '1'), d.param(5, 'integer'))} AS behind_count
    FROM ${t.deliveries} x JOIN ${t.events} e ON e.id = x.event_id
    WHERE ${d.ddl.phase.dead('x')}
      AND (${d.param(1, 'text')} IS NULL OR x.receiver_key = ${d.param(1, 'text')})
      AND ${
        after
          ? `x.completed_at <= ${d.param(2, 'timestamp')}
      AND (x.completed_at < ${d.param(2, 'timestamp')} OR x.id < ${d.param(3, 'bigint')})`
          : `${d.param(2, 'timestamp')} IS NULL AND ${d.param(3, 'bigint')} IS NULL`
      }
    ORDER BY x.completed_at DESC, x.id DESC
    LIMIT ${d.param(4, 'integer')}`;
}

/**
 * One page of events, newest first: `before` sequence $1 (without, $1 is NULL and the page
 * starts at the newest), at most $2. Reads the events' primary key backwards. One text per
 * shape, so SQLite (which plans before it binds) seeks to the cursor instead of stepping
 * over every newer event.
 */
export function recentEventsSql(t: TableNames, d: SqlDialect, before: boolean): string {
  return `
    SELECT e.id AS event_sequence, e.uuid AS event_uuid, e.name AS event_name,
           e.ordering_key AS event_ordering_key, e.recorded_at AS event_recorded_at,
           e.actor AS event_actor
    FROM ${t.events} e
    WHERE ${before ? `e.id < ${d.param(1, 'bigint')}` : `${d.param(1, 'bigint')} IS NULL`}
    ORDER BY e.id DESC
    LIMIT ${d.param(2, 'integer')}`;
}

/** One event by its uuid ($1). Reads the uuid's unique index. */
export function eventByUuidSql(t: TableNames, d: SqlDialect): string {
  return `SELECT ${EVENT_FIELDS('e')} FROM ${t.events} e WHERE e.uuid = ${d.param(1, 'uuid')}`;
}

/** One event by its sequence ($1): a parent of the caused-by chain. Reads the primary key. */
export function eventBySequenceSql(t: TableNames, d: SqlDialect): string {
  return `SELECT ${EVENT_FIELDS('e')} FROM ${t.events} e WHERE e.id = ${d.param(1, 'bigint')}`;
}

/**
 * Every delivery row of event $1, by id: the owed ones (deliveries_queue) and the settled
 * ones (deliveries_settled), each predicate stated as its partial index says it.
 */
export function deliveriesOfEventSql(t: TableNames, d: SqlDialect): string {
  return `
    SELECT * FROM (
      SELECT * FROM ${t.deliveries} WHERE event_id = ${d.param(1, 'bigint')} AND ${d.ddl.phase.owed()}
      UNION ALL
      SELECT * FROM ${t.deliveries} WHERE event_id = ${d.param(1, 'bigint')} AND ${d.ddl.phase.settled()}
    ) x ORDER BY id`;
}

/**
 * The live rows (owed or dead) of ordering key $1 among the receivers $2 (a list: the
 * config's durable receivers), by event, at most $3, each with its event's uuid and name.
 * Reads deliveries_ordering (a probe per receiver), the events by primary key.
 */
export function orderingKeyRowsSql(t: TableNames, d: SqlDialect): string {
  return `
    SELECT x.id, x.event_id, x.receiver_key, x.target, x.status, x.attempts, x.max_attempts,
           x.last_error, x.available_at, x.due_at, x.completed_at,
           e.uuid AS event_uuid, e.name AS event_name, e.recorded_at AS event_recorded_at
    FROM ${t.deliveries} x JOIN ${t.events} e ON e.id = x.event_id
    WHERE ${d.inList('x.receiver_key', 2, 'text')} AND x.ordering_key = ${d.param(1, 'text')}
      AND x.ordering_key IS NOT NULL AND ${d.ddl.phase.holdsBack('x')}
    ORDER BY x.event_id, x.id
    LIMIT ${d.param(3, 'integer')}`;
}

/** An event as a page shows it. */
export interface ConsoleEvent {
  readonly sequence: string;
  readonly id: string;
  readonly name: string;
  readonly version: number;
  readonly payload: unknown;
  readonly headers: Readonly<Record<string, unknown>>;
  readonly orderingKey: string | null;
  readonly idempotencyKey: string | null;
  readonly occurredAt: Date;
  readonly recordedAt: Date;
  readonly actor: string | null;
  readonly correlationId: string | null;
  readonly causedBy: string | null;
  readonly suppressedReason: string | null;
  readonly retentionSeconds: number | null;
  readonly deleteWhen: string | null;
}

/** A delivery row as the event page shows it. */
export interface ConsoleDelivery {
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
  readonly claimedAt: Date | null;
  readonly leaseUntil: Date | null;
  readonly lastError: string | null;
  readonly completedAt: Date | null;
  readonly succeededAt: Date | null;
}

/** A dead letter as its page shows it. */
export interface ConsoleDeadLetter {
  readonly deliveryId: string;
  readonly receiverKey: string;
  readonly target: string;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly lastError: string | null;
  readonly deadAt: Date | null;
  readonly orderingKey: string | null;
  readonly eventSequence: string;
  readonly eventId: string;
  readonly eventName: string;
  readonly recordedAt: Date;
  /** The first owed row of its key waiting behind it, or null. */
  readonly behind: { readonly deliveryId: string; readonly eventId: string } | null;
  /** How many owed rows of its key wait behind it (to {@link BEHIND_COUNT_CAP}). */
  readonly behindCount: number;
}

/** A line of the events list. */
export interface ConsoleEventLine {
  readonly sequence: string;
  readonly id: string;
  readonly name: string;
  readonly orderingKey: string | null;
  readonly recordedAt: Date;
  readonly actor: string | null;
}

/** A live row of an ordering key. */
export interface ConsoleKeyRow {
  readonly deliveryId: string;
  readonly eventSequence: string;
  readonly eventId: string;
  readonly eventName: string;
  readonly recordedAt: Date;
  readonly receiverKey: string;
  readonly target: string;
  readonly status: DeliveryStatus;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly lastError: string | null;
  readonly availableAt: Date;
}

/** A page of rows and the cursor of the next one (undefined: the last page). */
export interface Page<T> {
  readonly rows: readonly T[];
  readonly next: string | undefined;
}

type Row = Record<string, unknown>;

/** JSON a driver hands back as text (SQLite) or parsed (PostgreSQL), parsed. */
function json(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

const str = (v: unknown) => (v === null || v === undefined ? null : String(v));

async function select(rt: Runtime, sql: string, bind: unknown[]): Promise<Row[]> {
  // Through the dialect's runner, which spells the quoted names its way (MariaDB).
  return rt.dialect.runner(rt.sequelize).select<Row>(sql, bind);
}

/** Read a dead-letter cursor, `<completedAtMs>.<id>`, or undefined for none or a bad one. */
function deadCursor(cursor: string | undefined): { at: Date; id: string } | undefined {
  const m = cursor ? /^(\d{1,15})\.([1-9]\d{0,18})$/.exec(cursor) : null;
  return m ? { at: new Date(Number(m[1])), id: m[2] } : undefined;
}

/** One page of dead letters (see {@link deadLettersPageSql}). */
export async function readDeadLettersPage(
  rt: Runtime,
  options: { receiverKey?: string; after?: string; limit: number },
): Promise<Page<ConsoleDeadLetter>> {
  const d = rt.dialect.sql;
  const cursor = deadCursor(options.after);
  const rows = await select(rt, deadLettersPageSql(rt.tables, d, cursor !== undefined), [
    options.receiverKey ?? null,
    d.value(cursor?.at ?? null, 'timestamp'),
    d.value(cursor?.id ?? null, 'bigint'),
    options.limit + 1,
    BEHIND_COUNT_CAP,
  ]);
  const letters = rows.slice(0, options.limit).map(
    (r): ConsoleDeadLetter => ({
      deliveryId: String(r.id),
      receiverKey: String(r.receiver_key),
      target: String(r.target ?? ''),
      attempts: Number(r.attempts),
      maxAttempts: Number(r.max_attempts),
      lastError: str(r.last_error),
      deadAt: toDateOrNull(r.completed_at),
      orderingKey: str(r.ordering_key),
      eventSequence: String(r.event_sequence),
      eventId: String(r.event_uuid),
      eventName: String(r.event_name),
      recordedAt: toDate(r.event_recorded_at),
      behind:
        r.behind_id === null || r.behind_id === undefined
          ? null
          : { deliveryId: String(r.behind_id), eventId: String(r.behind_event_uuid) },
      behindCount: Number(r.behind_count ?? 0),
    }),
  );
  const last = letters[letters.length - 1];
  const next =
    rows.length > options.limit && last?.deadAt
      ? `${last.deadAt.getTime()}.${last.deliveryId}`
      : undefined;
  return { rows: letters, next };
}

/** One page of events, newest first (see {@link recentEventsSql}). */
export async function readRecentEvents(
  rt: Runtime,
  options: { before?: string; limit: number },
): Promise<Page<ConsoleEventLine>> {
  const before = options.before && /^[1-9]\d{0,18}$/.test(options.before) ? options.before : null;
  const rows = await select(rt, recentEventsSql(rt.tables, rt.dialect.sql, before !== null), [
    rt.dialect.sql.value(before, 'bigint'),
    options.limit + 1,
  ]);
  const lines = rows.slice(0, options.limit).map(
    (r): ConsoleEventLine => ({
      sequence: String(r.event_sequence),
      id: String(r.event_uuid),
      name: String(r.event_name),
      orderingKey: str(r.event_ordering_key),
      recordedAt: toDate(r.event_recorded_at),
      actor: str(r.event_actor),
    }),
  );
  const next = rows.length > options.limit ? lines[lines.length - 1]?.sequence : undefined;
  return { rows: lines, next };
}

function toEvent(r: Row): ConsoleEvent {
  const headers = json(r.event_headers);
  return {
    sequence: String(r.event_sequence),
    id: String(r.event_uuid),
    name: String(r.event_name),
    version: Number(r.event_version),
    payload: json(r.event_payload),
    headers:
      typeof headers === 'object' && headers !== null && !Array.isArray(headers)
        ? (headers as Record<string, unknown>)
        : {},
    orderingKey: str(r.event_ordering_key),
    idempotencyKey: str(r.event_idempotency_key),
    occurredAt: toDate(r.event_occurred_at),
    recordedAt: toDate(r.event_recorded_at),
    actor: str(r.event_actor),
    correlationId: str(r.event_correlation_id),
    causedBy: str(r.event_caused_by),
    suppressedReason: str(r.event_suppressed_reason),
    retentionSeconds:
      r.event_retention_seconds === null || r.event_retention_seconds === undefined
        ? null
        : Number(r.event_retention_seconds),
    deleteWhen: str(r.event_delete_when),
  };
}

/** An event's id as a uuid, lower-cased; undefined when it is not one. */
export function uuidOf(text: string): string | undefined {
  const t = text.trim().toLowerCase();
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(t) ? t : undefined;
}

/** One event by its uuid, or undefined (see {@link eventByUuidSql}). */
export async function readEventByUuid(
  rt: Runtime,
  uuid: string,
): Promise<ConsoleEvent | undefined> {
  const rows = await select(rt, eventByUuidSql(rt.tables, rt.dialect.sql), [uuid]);
  return rows[0] ? toEvent(rows[0]) : undefined;
}

/** How far up the caused-by chain a page follows. */
export const CAUSE_CHAIN_LIMIT = 10;

/**
 * The events that caused `event`, its parent first, up to {@link CAUSE_CHAIN_LIMIT}
 * (one primary-key read each); a parent pruned since ends the chain.
 */
export async function readCauseChain(rt: Runtime, event: ConsoleEvent): Promise<ConsoleEvent[]> {
  const chain: ConsoleEvent[] = [];
  const seen = new Set([event.sequence]);
  let parent = event.causedBy;
  const sql = eventBySequenceSql(rt.tables, rt.dialect.sql);
  while (parent !== null && chain.length < CAUSE_CHAIN_LIMIT && !seen.has(parent)) {
    seen.add(parent);
    const rows = await select(rt, sql, [rt.dialect.sql.value(parent, 'bigint')]);
    if (!rows[0]) break;
    const found = toEvent(rows[0]);
    chain.push(found);
    parent = found.causedBy;
  }
  return chain;
}

/** Every delivery row of an event (see {@link deliveriesOfEventSql}). */
export async function readDeliveriesOfEvent(
  rt: Runtime,
  sequence: string,
): Promise<ConsoleDelivery[]> {
  const rows = await select(rt, deliveriesOfEventSql(rt.tables, rt.dialect.sql), [
    rt.dialect.sql.value(sequence, 'bigint'),
  ]);
  return rows.map((r) => ({
    id: String(r.id),
    eventSequence: String(r.event_id),
    receiverKey: String(r.receiver_key),
    target: String(r.target ?? ''),
    status: r.status as DeliveryStatus,
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
    availableAt: toDate(r.available_at),
    dueAt: toDateOrNull(r.due_at),
    claimedBy: str(r.claimed_by),
    claimedAt: toDateOrNull(r.claimed_at),
    leaseUntil: toDateOrNull(r.lease_until),
    lastError: str(r.last_error),
    completedAt: toDateOrNull(r.completed_at),
    succeededAt: toDateOrNull(r.succeeded_at),
  }));
}

/** The live rows of an ordering key (see {@link orderingKeyRowsSql}). */
export async function readOrderingKeyRows(
  rt: Runtime,
  key: string,
  limit: number,
): Promise<ConsoleKeyRow[]> {
  const receivers = rt.config.receivers.filter((r) => r.mode === 'durable').map((r) => r.key);
  if (receivers.length === 0) return [];
  const d = rt.dialect.sql;
  const rows = await select(rt, orderingKeyRowsSql(rt.tables, d), [
    key,
    d.list(receivers, 'text'),
    limit,
  ]);
  return rows.map((r) => ({
    deliveryId: String(r.id),
    eventSequence: String(r.event_id),
    eventId: String(r.event_uuid),
    eventName: String(r.event_name),
    recordedAt: toDate(r.event_recorded_at),
    receiverKey: String(r.receiver_key),
    target: String(r.target ?? ''),
    status: r.status as DeliveryStatus,
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
    lastError: str(r.last_error),
    availableAt: toDate(r.available_at),
  }));
}
