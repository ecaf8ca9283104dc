/**
 * The PostgreSQL statements whose algorithm is PostgreSQL's own: the one-statement insert
 * (slot locks, unnest, NOTIFY), the SKIP LOCKED claim, and the record through `unnest`
 * with its claim check materialised first. They embed the shared conditions, column lists
 * and SET clause of `storage/sql/`. Exported (as `postgresStatements`) for the plan test
 * and `bench/explain.ts`, which EXPLAIN exactly the text the store runs.
 */
import { EVENT_COLUMNS } from '../rows.js';
import type { ClaimShape } from '../sql/claim-filter.js';
import {
  columnList,
  DELIVERY_INSERT_COLUMNS,
  EVENT_INSERT_COLUMNS,
  OUTCOME_COLUMNS,
} from '../sql/columns.js';
import { CLAIMED_COLUMNS, claimCandidates, heldBy, recordSet } from '../sql/conditions.js';
import type { RowColumn, SqlType } from '../sql/dialect.js';
import { acknowledgeSql, sharedStatements } from '../sql/statements.js';
import type { DeliveryRowInput, EventRowInput } from '../store.js';
import type { TableNames } from '../tables.js';
import { postgresDialect as d, pgArray } from './dialect.js';
import { keySlotLock, keySlotLocks } from './key-locks.js';

export interface PostgresStatements {
  readonly insertEvents: string;
  readonly insertEventsJson: string;
  readonly insertOne: string;
  /** The same three for events none of which has an idempotency key: no ON CONFLICT. */
  readonly insertEventsKeyless: string;
  readonly insertEventsJsonKeyless: string;
  readonly insertOneKeyless: string;
  readonly acknowledge: string;
  readonly acknowledgeMany: string;
  readonly claim: string;
  readonly record: string;
  readonly recordSucceeded: string;
  readonly recordMixed: string;
}

/** A delivery row to insert, keyed by its event's uuid (the sequence is not drawn yet). */
export interface KeyedDelivery {
  readonly eventUuid: string;
  readonly delivery: DeliveryRowInput;
}

/** The insert's delivery columns: the event uuid, then DELIVERY_INSERT_COLUMNS. */
export const KEYED_DELIVERY_COLUMNS: readonly RowColumn<KeyedDelivery>[] = [
  { name: 'event_uuid', type: 'uuid', value: (r) => r.eventUuid },
  ...DELIVERY_INSERT_COLUMNS.map((c) => ({
    ...c,
    value: (r: KeyedDelivery) => c.value(r.delivery),
  })),
];

/**
 * Parameters of the insert: the event columns (`columns`: EVENT_INSERT_COLUMNS, $1..$16,
 * then the outbox's declared event columns, see `eventInsertColumns`), then the delivery
 * columns keyed by uuid, then the notify channel; each numbered after the event columns.
 */
function insertParams(columns: readonly RowColumn<EventRowInput>[]) {
  const eventParams = columns.length;
  const deliveryFirst = eventParams + 1; // KEYED_DELIVERY_COLUMNS
  return {
    deliveryFirst,
    notifyChannel: deliveryFirst + KEYED_DELIVERY_COLUMNS.length,
    /** The one-event insert's delivery columns (no uuid: the row joins its one event). */
    oneDeliveryFirst: eventParams + 1,
    /** The one-event insert's notify channel. */
    oneNotifyChannel: eventParams + 1 + DELIVERY_INSERT_COLUMNS.length,
  };
}
const ORDERING_KEY_PARAM = EVENT_INSERT_COLUMNS.findIndex((c) => c.name === 'ordering_key') + 1;
/** The record's token parameters, after the outcome arrays: $8 worker, $9 claimed at. */
const RECORD_WORKER = `$${OUTCOME_COLUMNS.length + 1}`;
const RECORD_CLAIMED_AT = `$${OUTCOME_COLUMNS.length + 2}`;
/** The mixed record's succeeded rows, after the token: $10 their ids, $11 when they went. */
const MIXED_OK_IDS = `$${OUTCOME_COLUMNS.length + 3}`;
const MIXED_OK_AT = `$${OUTCOME_COLUMNS.length + 4}`;

/**
 * A timestamptz column as epoch milliseconds (`float8`, exact for a millisecond time):
 * what the claim returns for its rows' times, since node-postgres' parse of a timestamptz
 * text (a regular expression and a Date per column, ~1.1 µs) is a tenth of a transport's
 * client time per event; `toDate` reads a number as SQLite's times are read.
 */
const epochMs = (column: string): string => `round(extract(epoch FROM ${column}) * 1000)::float8`;

/**
 * From how many events `insertEvents` binds its columns as JSON arrays
 * (`insertEventsJson`) rather than PostgreSQL arrays. node-postgres writes an array
 * parameter element by element in JavaScript (prepareValue, then arrayString and
 * escapeElement per value; a Date through its local-time formatter), where
 * `JSON.stringify` of a column is native code; the server spends a little more on the
 * JSON form (10-30 %: a larger text to parse, the delivery rows sorted), the client much
 * less. bench/experiments/insert-events.ts (bench/README.md, "Measured here (issue 10,
 * the events' insert)"): at 1,000 and 10,000 events the JSON form takes 0.75-0.80 of the
 * arrays form's time, at 300 0.82; at 1 to 100 events the two are within noise (at 100
 * the arrays form was once the faster), so the arrays form, `fire()`'s hot path (issue
 * 7), is kept below this.
 */
export const JSON_INSERT_FROM = 250;

/** The PostgreSQL name of a value type: `bigint`, `timestamptz`, `jsonb`. */
const pgType = (type: SqlType): string => pgArray(type).slice(0, -2);

/**
 * The value of one text element of a JSON column array as its column's type: a
 * timestamp from epoch milliseconds (integer arithmetic, exact), anything else by its
 * type's input function (a json column's JSON text cast to jsonb, as the arrays form's
 * `jsonb[]` elements are).
 */
const fromJsonText = (value: string, type: SqlType): string =>
  type === 'timestamp'
    ? `'epoch'::timestamptz + ${value}::bigint * interval '1 millisecond'`
    : `${value}::${pgType(type)}`;

/**
 * A table of rows read from one JSON array per column, `$first` on (see
 * {@link bindJsonColumns}), as `alias`: `json_array_elements_text` of each, zipped by
 * `ROWS FROM` in array order as `unnest` zips PostgreSQL arrays (a JSON `null` element
 * is SQL NULL), each cast to its column's type, and `ordinal`, the row's place (from 1).
 */
export function jsonColumnsParam<T>(
  first: number,
  alias: string,
  columns: readonly RowColumn<T>[],
): string {
  return `(SELECT ${columns.map((c) => `${fromJsonText(`r.${c.name}`, c.type)} AS ${c.name}`).join(', ')}, r.ordinal
           FROM ROWS FROM (${columns.map((_, i) => `json_array_elements_text($${first + i}::json)`).join(', ')})
             WITH ORDINALITY AS r(${columns.map((c) => c.name).join(', ')}, ordinal)) AS ${alias}`;
}

/**
 * The parameters {@link jsonColumnsParam} reads: one `JSON.stringify` per column (a Date
 * as its epoch milliseconds, a json column as its JSON text, a string). Undefined when a
 * string holds a lone UTF-16 surrogate: JSON.stringify writes it as a `\udXXX` escape,
 * which PostgreSQL's JSON parser rejects, where the arrays form stores it as U+FFFD (the
 * UTF-8 encoder's replacement), so such a batch takes the arrays form and is stored alike.
 * (The test is on the JSON text, so a string that merely spells `\ud800` also goes the
 * arrays way, which is only slower.)
 */
export function bindJsonColumns<T>(
  rows: readonly T[],
  columns: readonly RowColumn<T>[],
): string[] | undefined {
  const bound = columns.map((c) =>
    JSON.stringify(
      c.type === 'timestamp' ? rows.map((r) => epochMsOf(c.value(r))) : rows.map(c.value),
    ),
  );
  return bound.some((json) => LONE_SURROGATE_ESCAPE.test(json)) ? undefined : bound;
}

/** How JSON.stringify writes a lone surrogate (lower-case hex, D800–DFFF). */
const LONE_SURROGATE_ESCAPE = /\\ud[89a-f]/;

const epochMsOf = (v: string | number | boolean | Date | null): string | number | boolean | null =>
  v instanceof Date ? v.getTime() : v;

/**
 * The conflict rule of an insert of events with idempotency keys: skip an event whose key
 * exists (the partial unique index events_idempotency, which it must name by its predicate).
 * Events without one cannot conflict, and their insert says nothing: with an arbiter index
 * PostgreSQL inserts every row speculatively, and confirms it in a WAL record of its own
 * (48 B an event, docs/storage.md).
 */
export const ON_IDEMPOTENCY_CONFLICT =
  'ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING';

/** The conflict clause of an insert: `keyed` when any of its events has a key. */
const conflict = (keyed: boolean): string => (keyed ? `\n        ${ON_IDEMPOTENCY_CONFLICT}` : '');

/**
 * The insert of `postgresStatements().insertEvents` in one of its two forms: each column
 * bound as a PostgreSQL array (`unnest`) or as a JSON array (`json_array_elements_text`),
 * the same parameters in the same places. Nothing else differs. `keyed`: whether any of its
 * events may carry an idempotency key (see {@link ON_IDEMPOTENCY_CONFLICT}). `columns`: the
 * event columns written (`eventInsertColumns`: the outbox's declared ones after the
 * library's), the later parameters numbered after them.
 */
export function postgresInsert(
  t: TableNames,
  notifyChannel: string | undefined,
  form: 'arrays' | 'json',
  keyed = true,
  columns: readonly RowColumn<EventRowInput>[] = EVENT_INSERT_COLUMNS,
): string {
  const { deliveryFirst, notifyChannel: channelParam } = insertParams(columns);
  const rows = form === 'json' ? jsonColumnsParam : d.rowsParam;
  const keys =
    form === 'json'
      ? `ARRAY(SELECT json_array_elements_text($${ORDERING_KEY_PARAM}::json))`
      : `$${ORDERING_KEY_PARAM}::text[]`;
  return `
      WITH l AS (
        ${keySlotLocks(t, keys)}
      ), e AS (
        INSERT INTO ${t.events} (${columnList(columns)})
        SELECT ${form === 'json' ? columnList(columns) : '*'} FROM ${rows(1, 'x', columns)}
        WHERE (SELECT count(*) FROM l) >= 0 -- take the key locks before any sequence is drawn${conflict(keyed)}
        RETURNING id, uuid, name, ordering_key
      ), d AS (
        INSERT INTO ${t.deliveries} (event_id, ${columnList(DELIVERY_INSERT_COLUMNS)}, ordering_key)
        SELECT e.id, ${DELIVERY_INSERT_COLUMNS.map((c) => `x.${c.name}`).join(', ')}, e.ordering_key
        FROM ${rows(deliveryFirst, 'x', KEYED_DELIVERY_COLUMNS)}
        JOIN e ON e.uuid = x.event_uuid${
          // The join's output order is its plan's, and the JSON form's (its row counts
          // unknown to the planner) wrote an event's delivery rows in reverse: it sorts
          // them into input order, the order the arrays form's plan writes them in
          // (test/storage/insert-forms.test.ts compares the two).
          form === 'json' ? ' ORDER BY x.ordinal' : ''
        }
      )${
        notifyChannel
          ? `, n AS (SELECT pg_notify($${channelParam}, t.name) FROM (SELECT DISTINCT name FROM e) t WHERE $${channelParam}::text IS NOT NULL)
      SELECT e.id::text AS sequence, e.uuid::text AS uuid, (SELECT count(*) FROM n) AS notified FROM e`
          : `
      SELECT e.id::text AS sequence, e.uuid::text AS uuid FROM e`
      }`;
}

/**
 * `postgresStatements().insertOne`: the insert of ONE event with ONE delivery row, each
 * column a scalar parameter. The same rows, locks, conflict rule, NOTIFY and answer as
 * {@link postgresInsert}; it only skips what a batch needs (unnesting 21 arrays, joining
 * the delivery rows to their events by uuid, the DISTINCT of topics), which for a single
 * event is much of the statement's time: 0.44-0.46 against 0.60-0.62 ms p50 per
 * statement, the server's share roughly halved, in bench/experiments/insert-events.ts
 * (`one` against `arrays`; bench/README.md, "Measured here (issue 7, one event's insert)").
 */
export function postgresInsertOne(
  t: TableNames,
  notifyChannel: string | undefined,
  keyed = true,
  columns: readonly RowColumn<EventRowInput>[] = EVENT_INSERT_COLUMNS,
): string {
  const { oneDeliveryFirst, oneNotifyChannel } = insertParams(columns);
  const scalar = (i: number, type: SqlType) => `$${i}::${pgType(type)}`;
  const key = scalar(ORDERING_KEY_PARAM, 'text');
  return `
      WITH l AS (
        ${keySlotLock(t, key)}
      ), e AS (
        INSERT INTO ${t.events} (${columnList(columns)})
        SELECT ${columns.map((c, i) => scalar(1 + i, c.type)).join(', ')}
        WHERE (SELECT count(*) FROM l) >= 0 -- take the key lock before the sequence is drawn${conflict(keyed)}
        RETURNING id, uuid, name, ordering_key
      ), d AS (
        INSERT INTO ${t.deliveries} (event_id, ${columnList(DELIVERY_INSERT_COLUMNS)}, ordering_key)
        SELECT e.id, ${DELIVERY_INSERT_COLUMNS.map((c, i) => scalar(oneDeliveryFirst + i, c.type)).join(', ')}, e.ordering_key
        FROM e
      )${
        notifyChannel
          ? `, n AS (SELECT pg_notify($${oneNotifyChannel}, e.name) FROM e WHERE $${oneNotifyChannel}::text IS NOT NULL)
      SELECT e.id::text AS sequence, e.uuid::text AS uuid, (SELECT count(*) FROM n) AS notified FROM e`
          : `
      SELECT e.id::text AS sequence, e.uuid::text AS uuid FROM e`
      }`;
}

/**
 * The parameters of {@link postgresInsertOne} before its channel: the event's columns
 * (`columns`, as the statement was built with), then its delivery row's, in the
 * statement's order.
 */
export function insertOneValues(
  event: EventRowInput,
  delivery: DeliveryRowInput,
  columns: readonly RowColumn<EventRowInput>[] = EVENT_INSERT_COLUMNS,
): unknown[] {
  return [
    ...columns.map((c) => c.value(event)),
    ...DELIVERY_INSERT_COLUMNS.map((c) => c.value(delivery)),
  ];
}

/**
 * The PostgreSQL statements for these tables. `eventColumns`: the event columns the insert
 * writes (`eventInsertColumns` of the outbox's declared ones; EVENT_INSERT_COLUMNS for an
 * outbox that declares none, whose statements it leaves as they were).
 */
export function postgresStatements(
  t: TableNames,
  notifyChannel: string | undefined,
  eventColumns: readonly RowColumn<EventRowInput>[] = EVENT_INSERT_COLUMNS,
): PostgresStatements {
  return {
    /**
     * Write events and their delivery rows in one statement.
     *
     * First, `l` locks the ordering keys' slots (see key-locks.ts): a second transaction
     * firing key K waits until the first commits or rolls back, so the sequence order of a
     * key's events is their commit order and the relay, which reads committed rows only,
     * never delivers a later event of K before an earlier one that committed late. Events
     * without a key take no lock. LIMIT: a transaction holds at most KEY_LOCK_SLOTS (256)
     * advisory locks for its keys, however many keys it writes (20,000 distinct keys in one
     * `fireMany` is fine). The slots are taken in ascending order within the statement, so
     * two `fireMany` calls with keys in opposite orders queue rather than deadlock. The
     * cost of the bound: two writers whose keys share a slot queue behind each other
     * although their keys differ (1 pair in 256), and a transaction that
     * fires in two statements and waits on another that did the same, in the other
     * order, can still deadlock: PostgreSQL aborts one with 40P01 (retriable). A lock is
     * held to the end of the caller's transaction, so fire late in a long one.
     *
     * An event whose idempotency key exists is skipped by ON CONFLICT (never an error, so
     * the caller's transaction is not aborted) and, being absent from `e`, writes no
     * delivery rows; a batch with no key at all takes the `…Keyless` form, without it. With a notify channel, one NOTIFY per topic is queued in the same
     * transaction; PostgreSQL sends it on commit, drops it on rollback, and folds repeats
     * within a transaction. A NULL channel queues none (`fire(…, { wakeup: false })`, or a
     * write folded into an earlier NOTIFY by `notifyCoalesceMs`): one statement text
     * either way, so the prepared statement serves both.
     *
     * Params: $1..$n the event columns as arrays (`eventColumns`: EVENT_INSERT_COLUMNS,
     * $1..$16, then the outbox's declared event columns); the next six the delivery columns
     * as arrays, keyed by event uuid (the first of them); the last the channel.
     * Returns (sequence, uuid) of each event written.
     */
    insertEvents: postgresInsert(t, notifyChannel, 'arrays', true, eventColumns),
    /**
     * The same statement for a large batch (from {@link JSON_INSERT_FROM} events), each
     * of the same parameters a JSON array instead (see {@link jsonColumnsParam}): the same
     * rows, sequences drawn in the same order, the same NOTIFY.
     */
    insertEventsJson: postgresInsert(t, notifyChannel, 'json', true, eventColumns),
    /**
     * The same statement for one event with one delivery row, `fire()`'s common case
     * (see {@link postgresInsertOne}). Params: $1..$n the event columns (as above), the
     * next five the delivery columns (DELIVERY_INSERT_COLUMNS), the last the channel, each
     * a scalar.
     */
    insertOne: postgresInsertOne(t, notifyChannel, true, eventColumns),
    /** The three forms for events without an idempotency key: no ON CONFLICT, else alike. */
    insertEventsKeyless: postgresInsert(t, notifyChannel, 'arrays', false, eventColumns),
    insertEventsJsonKeyless: postgresInsert(t, notifyChannel, 'json', false, eventColumns),
    insertOneKeyless: postgresInsertOne(t, notifyChannel, false, eventColumns),
    /**
     * Claim up to $6 owed deliveries for worker $1 at claim time $2, leased until $3, read
     * against the clock $4 ($5 ignore backoff, $7 ids to leave out, $8 the only ids to
     * consider or NULL): the shared `claimCandidates` (owed, not held back by its ordering
     * key, oldest event first), locked FOR UPDATE SKIP LOCKED so N relays split the queue.
     * A batch holds at most one event per key and receiver. Returns CLAIMED_COLUMNS and
     * EVENT_COLUMNS, by event sequence. Reads the partial index deliveries_queue (the owed
     * rows by event sequence), and deliveries_ordering for the ordering check; it changes no
     * indexed column, so PostgreSQL writes it as a HOT update where the row's page has room
     * (sql/phase.ts). `id = ANY(ARRAY(...))` rather than `id IN (...)`: the IN form
     * sometimes plans a full scan of a large table.
     *
     * The claim commits without waiting for its WAL to reach disk (`synchronous_commit`
     * off for its own one-statement transaction only, `set_config(…, true)`): a claim is a
     * lease, not a fact. Lost in a crash, the row is owed again and delivered again, which
     * at-least-once allows; and every verdict after it (the record, a handler's
     * acknowledgement) commits synchronously, which flushes the claim's WAL before its own.
     * That spares the commit-to-start path one disk flush (about 1 ms on this project's
     * bench machine). The setting ends with the statement: the pool's connection keeps the
     * server's default for whatever runs on it next.
     */
    claim: postgresClaim(t),
    /** The shared acknowledgement (see sql/statements.ts), run as a prepared statement. */
    acknowledge: sharedStatements(t, d).acknowledge,
    /**
     * The acknowledgements of handlers that wrote nothing, grouped (ack-groups.ts): $1
     * worker, $2 claimed at (the compare-and-set), $3 the ids, $4 when. Returns the id of
     * each row it acknowledged; a row missing lost its claim.
     */
    acknowledgeMany: `${acknowledgeSql(t, {
      worker: '$1',
      claimedAt: '$2',
      ids: d.inList('id', 3, 'bigint'),
      at: '$4',
    })}
      RETURNING id::text AS id`,
    /**
     * Record many outcomes in one statement: $1..$7 parallel arrays (OUTCOME_COLUMNS: id,
     * status, attempts, available_at, due_at, last_error, completed_at), the shared SET
     * clause. Compare-and-set: only rows still claimed by $8 at $9 change, so a worker
     * whose lease lapsed writes nothing. The claim check runs first, in `mine`, through
     * the primary key (`id = ANY($1)`): written as a plain join condition, the planner
     * expects one claimed row, scans the table and re-reads the outcome list per row
     * (70 ms for 500 outcomes on 50k rows, against 8 ms this way).
     */
    record: `
      WITH mine AS MATERIALIZED (
        SELECT id FROM ${t.deliveries}
        WHERE ${d.inList('id', 1, 'bigint')} AND ${heldBy(undefined, RECORD_WORKER, RECORD_CLAIMED_AT)}
      )
      UPDATE ${t.deliveries} d
      SET ${recordSet('d', 'v')}
      FROM ${d.rowsParam(1, 'v', OUTCOME_COLUMNS)}
      WHERE d.id = v.id AND d.id IN (SELECT id FROM mine)`,
    /**
     * The record of a batch whose every outcome succeeded, the common case: no outcome
     * arrays to join, the rows by primary key (`id = ANY($3)`), as the bare SQL loop of
     * bench/ marks them. $1 worker, $2 claimed at (the compare-and-set), $3 the ids, $4
     * when they went (the batch's last success: one time for the batch).
     */
    recordSucceeded: acknowledgeSql(t, {
      worker: '$1',
      claimedAt: '$2',
      ids: d.inList('id', 3, 'bigint'),
      at: '$4',
    }),
    /**
     * A batch with both: the succeeded rows the cheap way ($10 their ids, $11 when), the
     * rest through the full form above ($1..$9), in one statement. The two UPDATEs touch
     * disjoint rows. Returns `n`, the rows both changed.
     */
    recordMixed: `
      WITH ok AS (${acknowledgeSql(t, {
        worker: RECORD_WORKER,
        claimedAt: RECORD_CLAIMED_AT,
        ids: d.inList('id', Number(MIXED_OK_IDS.slice(1)), 'bigint'),
        at: `${MIXED_OK_AT}::timestamptz`,
      })}
        RETURNING 1
      ), mine AS MATERIALIZED (
        SELECT id FROM ${t.deliveries}
        WHERE ${d.inList('id', 1, 'bigint')} AND ${heldBy(undefined, RECORD_WORKER, RECORD_CLAIMED_AT)}
      ), rest AS (
        UPDATE ${t.deliveries} d
        SET ${recordSet('d', 'v')}
        FROM ${d.rowsParam(1, 'v', OUTCOME_COLUMNS)}
        WHERE d.id = v.id AND d.id IN (SELECT id FROM mine)
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM ok) + (SELECT count(*) FROM rest) AS n`,
  };
}

/**
 * The take under a claim in ONE statement (a task worker's `deliverOne(id, claim)`): the
 * shared `takeClaim` condition — the row $6 still held by worker $1 under the claim made
 * at $2, its lease live at $7 — moves it to worker $3 at $4, leased until $5, and returns
 * it as the claim does (CLAIMED_COLUMNS and EVENT_COLUMNS, times as epoch milliseconds),
 * joined to its event: one round trip where the shared form takes two. No row: the take
 * failed. Reads the two primary keys; committed (synchronously) before the receiver runs.
 */
export function postgresTakeClaim(t: TableNames): string {
  return `
      WITH taken AS (
        UPDATE ${t.deliveries} d SET claimed_by = $3, claimed_at = $4, lease_until = $5
        WHERE d.id = $6::bigint AND ${heldBy('d', '$1', '$2')} AND d.lease_until > $7
        RETURNING ${CLAIMED_COLUMNS('d')}
      )
      SELECT c.id::text AS id, c.receiver_key, c.target, c.attempts, c.max_attempts,
             ${epochMs('c.due_at')} AS due_at, ${EVENT_COLUMNS('e', epochMs)}
      FROM taken c JOIN ${t.events} e ON e.id = c.event_id`;
}

/**
 * The claim of one filter shape (see sql/claim-filter.ts; the unfiltered claim without
 * one): the text `postgresStatements().claim` documents, with the shape's conditions, and
 * their parameters from $9 on, in the candidates.
 */
export function postgresClaim(t: TableNames, shape?: ClaimShape): string {
  return `
      WITH claimed AS (
        UPDATE ${t.deliveries} d
        SET status = 'claimed', claimed_by = $1, claimed_at = $2, lease_until = $3
        WHERE d.id = ANY(ARRAY(
          ${claimCandidates(t, d, shape, '\n            FOR UPDATE SKIP LOCKED')}
        ))
        RETURNING ${CLAIMED_COLUMNS('d')}
      )
      SELECT c.id::text AS id, c.receiver_key, c.target, c.attempts, c.max_attempts,
             ${epochMs('c.due_at')} AS due_at, ${EVENT_COLUMNS('e', epochMs)}
      FROM claimed c JOIN ${t.events} e ON e.id = c.event_id
      WHERE (SELECT set_config('synchronous_commit', 'off', true)) = 'off'
      ORDER BY c.event_id, c.id`;
}
