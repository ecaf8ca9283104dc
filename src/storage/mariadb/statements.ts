/**
 * The MariaDB statements whose algorithm is MariaDB's own. They embed the shared
 * conditions, column lists and SET clause of `storage/sql/`.
 *
 * - The insert: the events in one statement (`ON DUPLICATE KEY UPDATE id = id`: an event
 *   whose idempotency key exists writes nothing and raises nothing, so the caller's
 *   transaction goes on, where a plain INSERT's duplicate-key error would leave the caller to
 *   roll back; unlike `INSERT IGNORE` it turns no other error into a warning), then the
 *   delivery rows of those written, by their event ids. The ids come back through
 *   `RETURNING` on MariaDB; MySQL has none, so there they are read back by uuid (one event:
 *   the OK packet's insert id).
 * - The claim: `SELECT … FOR UPDATE SKIP LOCKED` of the shared candidates, then an UPDATE
 *   of those ids, in one short READ COMMITTED transaction (MariaDB has no UPDATE … RETURNING,
 *   and cannot update a table its own subquery reads); the rows and their events are read
 *   after it commits.
 * - The record and a replay's reopening: a multi-table UPDATE joined to `JSON_TABLE` (no
 *   `UPDATE … FROM`), its SET clause qualified, since the outcome table has the same column
 *   names.
 */

import { EVENT_COLUMNS } from '../rows.js';
import type { ClaimShape } from '../sql/claim-filter.js';
import {
  columnList,
  DELIVERY_INSERT_COLUMNS,
  EVENT_INSERT_COLUMNS,
  OUTCOME_COLUMNS,
} from '../sql/columns.js';
import {
  CLAIMED_COLUMNS,
  claimCandidates,
  heldBy,
  lapsed,
  ready,
  recordSet,
} from '../sql/conditions.js';
import type { RowColumn, SqlDialect } from '../sql/dialect.js';
import { REOPEN_COLUMNS, TERMINAL, WITHDRAWABLE } from '../sql/operations.js';
import type { DeliveryRowInput, EventRowInput } from '../store.js';
import type { TableNames } from '../tables.js';
import { jsonList, jsonRows } from './dialect.js';

/** A delivery row to insert, with its written event's sequence and ordering key. */
export interface SequencedDelivery {
  readonly sequence: string;
  readonly orderingKey: string | null;
  readonly delivery: DeliveryRowInput;
}

/** The insert's delivery columns: event_id, DELIVERY_INSERT_COLUMNS, ordering_key. */
export const SEQUENCED_DELIVERY_COLUMNS: readonly RowColumn<SequencedDelivery>[] = [
  { name: 'event_id', type: 'bigint', value: (r) => r.sequence },
  ...DELIVERY_INSERT_COLUMNS.map((c) => ({
    ...c,
    value: (r: SequencedDelivery) => c.value(r.delivery),
  })),
  { name: 'ordering_key', type: 'text', value: (r) => r.orderingKey },
];

/** An event whose idempotency key (or uuid) exists writes nothing, and fails nothing. */
const ON_DUPLICATE = 'ON DUPLICATE KEY UPDATE id = id';

/** `SET a = …` of a multi-table UPDATE, each column on the left qualified by `row`. */
const qualified = (set: string, row: string): string =>
  set.replace(/^(\s*)([a-z_]+) =/gm, `$1${row}.$2 =`);

/**
 * The MariaDB statements for these tables. `eventColumns`: the event columns the insert
 * writes (`eventInsertColumns` of the outbox's declared ones; EVENT_INSERT_COLUMNS, the
 * statements as they were, for an outbox that declares none).
 */
export function mariadbStatements(
  t: TableNames,
  d: SqlDialect,
  returning: boolean,
  eventColumns: readonly RowColumn<EventRowInput>[] = EVENT_INSERT_COLUMNS,
) {
  const values = (first: number, n: number) =>
    Array.from({ length: n }, (_, i) => `$${first + i}`).join(', ');
  return {
    /**
     * Insert events: $1 a JSON array of `eventColumns` objects, written in array order
     * (so ids follow the input). With RETURNING, returns (id, uuid) of each event written
     * (a duplicate's row, unchanged, comes back with the stored uuid, which names no input).
     * Reads the unique indexes on uuid and idempotency_key.
     */
    insertEvents: `
      INSERT INTO ${t.events} (${columnList(eventColumns)})
      SELECT ${eventColumns.map((c) => `x.${c.name}`).join(', ')}
      FROM ${jsonRows(1, 'x', eventColumns)}
      ORDER BY x.ordinal
      ${ON_DUPLICATE}${returning ? '\n      RETURNING id, uuid' : ''}`,
    /** One event, its `eventColumns` as scalars $1..$n; RETURNING as above. */
    insertOneEvent: `
      INSERT INTO ${t.events} (${columnList(eventColumns)})
      VALUES (${values(1, eventColumns.length)})
      ${ON_DUPLICATE}${returning ? '\n      RETURNING id, uuid' : ''}`,
    /** The ids of the events of these uuids ($1, a list): the insert's answer without RETURNING. */
    idsOfUuids: `SELECT id, uuid FROM ${t.events} WHERE ${d.inList('uuid', 1, 'uuid')}`,
    /** Insert delivery rows: $1 a JSON array of SEQUENCED_DELIVERY_COLUMNS objects, in order. */
    insertDeliveries: `
      INSERT INTO ${t.deliveries} (${columnList(SEQUENCED_DELIVERY_COLUMNS)})
      SELECT ${SEQUENCED_DELIVERY_COLUMNS.map((c) => `x.${c.name}`).join(', ')}
      FROM ${jsonRows(1, 'x', SEQUENCED_DELIVERY_COLUMNS)}
      ORDER BY x.ordinal`,
    /** One delivery row, its columns as scalars $1..$7 (SEQUENCED_DELIVERY_COLUMNS). */
    insertOneDelivery: `
      INSERT INTO ${t.deliveries} (${columnList(SEQUENCED_DELIVERY_COLUMNS)})
      VALUES (${values(1, SEQUENCED_DELIVERY_COLUMNS.length)})`,
    /** The unfiltered claim's first step (see {@link mariadbClaim}). */
    claim: mariadbClaim(t, d),
    /**
     * The claim's second step: of the candidates $1 (a list), those still owed and ready at
     * $2 ($3 ignore backoff) or lapsed, locked `FOR UPDATE SKIP LOCKED`, each through the
     * primary key (the list drives the join, STRAIGHT_JOIN): a row another claim holds is
     * passed over, and no other row is locked — not a row of another lane or topic (see
     * {@link mariadbClaim}), nor, with no LIMIT to cut the result, a matching row left out
     * of it. Unordered.
     */
    lockCandidates: `
      SELECT STRAIGHT_JOIN c.id FROM ${jsonList(1, 'bigint', 'l')}
      JOIN ${t.deliveries} c ON c.id = l.v
      WHERE ${d.ddl.phase.owed('c')}
        AND ((${ready('c', '$2', '$3')}) OR (${lapsed('c', '$2')}))
      FOR UPDATE SKIP LOCKED`,
    /**
     * The claim's third step: mark the rows $4 (a list) claimed by worker $1 at $2, leased
     * until $3. Reads the primary key.
     */
    markClaimed: `
      UPDATE ${t.deliveries} AS d JOIN ${jsonList(4, 'bigint', 'l')} ON d.id = l.v
      SET d.status = 'claimed', d.claimed_by = $1, d.claimed_at = $2, d.lease_until = $3`,
    /**
     * sql/statements.ts `renewLeases` ($1 worker, $2 claimed at, $3 lease until, $4 the ids)
     * as a multi-table UPDATE joined to the list: MariaDB (before 11.1) plans a single-table
     * UPDATE's `id IN (subquery)` as a scan of the whole table, the list joined to each row
     * (a claim's marking of 500 rows took 0.5-1.4 s on 2,000 rows; joined, it reads them by
     * primary key). The same holds for `release` and `markClaimed`.
     */
    renewLeases: `
      UPDATE ${t.deliveries} AS d JOIN ${jsonList(4, 'bigint', 'l')} ON d.id = l.v
      SET d.lease_until = $3
      WHERE ${heldBy('d', '$1', '$2')}`,
    /** sql/statements.ts `release`, joined to its list as `renewLeases` is. */
    release: `
      UPDATE ${t.deliveries} AS d JOIN ${jsonList(4, 'bigint', 'l')} ON d.id = l.v
      SET d.status = CASE WHEN d.attempts > 0 THEN 'failed' ELSE 'pending' END,
          d.available_at = LEAST(d.available_at, $3), d.lease_until = NULL
      WHERE ${heldBy('d', '$1', '$2')}`,
    /**
     * The claimed rows $1 (a list), CLAIMED_COLUMNS with their events' EVENT_COLUMNS, by
     * event sequence. Reads both primary keys.
     */
    claimedRows: `
      SELECT ${CLAIMED_COLUMNS('c')}, ${EVENT_COLUMNS('e')}
      FROM ${t.deliveries} c JOIN ${t.events} e ON e.id = c.event_id
      WHERE ${d.inList('c.id', 1, 'bigint')}
      ORDER BY c.event_id, c.id`,
    /**
     * Record many outcomes in one statement: $1 a JSON array of OUTCOME_COLUMNS objects, the
     * shared SET clause. Compare-and-set: only rows still claimed by $2 at $3 change.
     * Reads the primary key.
     */
    record: `
      UPDATE ${t.deliveries} AS d JOIN ${jsonRows(1, 'v', OUTCOME_COLUMNS)} ON d.id = v.id
      SET ${qualified(recordSet('d', 'v'), 'd')}
      WHERE ${heldBy('d', '$2', '$3')}`,
    /** The rows $1.. (a list) still held under worker $2's claim at $3: `(n)`. */
    countHeld: `
      SELECT count(*) AS n FROM ${t.deliveries}
      WHERE ${d.inList('id', 1, 'bigint')} AND ${heldBy(undefined, '$2', '$3')}`,
    /**
     * sql/operations.ts `cancel` ($1 events, $2 receiver, $3 row ids, $4 completed at),
     * joined to its events as `renewLeases` is to its ids.
     */
    cancel: `
      UPDATE ${t.deliveries} AS d JOIN ${jsonList(1, 'bigint', 'l')} ON d.event_id = l.v
      SET status = 'cancelled', completed_at = $4
      WHERE ${d.ddl.phase.owed('d')}
        AND ($2 IS NULL OR d.receiver_key = $2)
        AND ($3 IS NULL OR ${d.inList('d.id', 3, 'bigint')})
        AND d.status IN (${WITHDRAWABLE})`,
    /** sql/operations.ts `requeue` ($1 ids, $2 now), joined to its ids. */
    requeue: `
      UPDATE ${t.deliveries} AS d JOIN ${jsonList(1, 'bigint', 'l')} ON d.id = l.v
      SET status = 'pending', attempts = 0, available_at = $2, due_at = $2,
          completed_at = NULL, lease_until = NULL
      WHERE d.status = 'dead'`,
    /** sql/operations.ts `reopen`, as a multi-table UPDATE. */
    reopen: `
      UPDATE ${t.deliveries} AS d JOIN ${jsonRows(1, 'v', REOPEN_COLUMNS)} ON d.id = v.id
      SET d.status = 'pending', d.attempts = 0, d.last_error = NULL, d.available_at = v.available_at,
          d.due_at = v.due_at, d.completed_at = NULL, d.lease_until = NULL
      WHERE d.status IN (${TERMINAL})`,
  };
}

/**
 * The claim's first step for one filter shape (see sql/claim-filter.ts): the shared
 * candidates ($4 now, $5 ignore backoff, $6 how many, $7 ids to leave out, $8 the only ids
 * or NULL; the filters' from $9), a plain read that locks nothing. Returns the ids. Reads
 * deliveries_queue (the owed rows, by event sequence) and deliveries_ordering. $1..$3 are
 * the UPDATE's, unused here and bound anyway, so the parameters read the same as elsewhere.
 *
 * Why not `FOR UPDATE SKIP LOCKED` here, as on PostgreSQL: InnoDB locks each row a locking
 * scan reads BEFORE the rest of the WHERE (a lane's receiver keys, a topic) is checked,
 * and a concurrent claim skips it meanwhile, so relays of different lanes would hide each
 * other's rows. The candidates are read unlocked, then only they are locked, by primary key
 * (`lockCandidates`), re-checked there, and any another claim took passed over.
 */
export function mariadbClaim(t: TableNames, d: SqlDialect, shape?: ClaimShape): string {
  return claimCandidates(t, d, shape);
}

export type MariadbStatements = ReturnType<typeof mariadbStatements>;
