/**
 * The SQLite statements whose algorithm is SQLite's own: the insert as two statements
 * over JSON arrays (SQLite has no arrays, and its events' sequences are needed before
 * their delivery rows can be written, where PostgreSQL joins them in one statement), the claim
 * as one UPDATE … RETURNING (one writer: it is atomic without SKIP LOCKED; the events are
 * read after it, since an UPDATE cannot feed a join), and the record through `json_each`.
 * They embed the shared conditions, column lists and SET clause of `storage/sql/`.
 */

import type { ClaimShape } from '../sql/claim-filter.js';
import {
  columnList,
  DELIVERY_INSERT_COLUMNS,
  EVENT_INSERT_COLUMNS,
  OUTCOME_COLUMNS,
} from '../sql/columns.js';
import { CLAIMED_COLUMNS, claimCandidates, heldBy, recordSet } from '../sql/conditions.js';
import type { RowColumn } from '../sql/dialect.js';
import type { DeliveryRowInput, EventRowInput } from '../store.js';
import type { TableNames } from '../tables.js';
import { sqliteDialect as d, jsonColumns } from './dialect.js';

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

/** Skip an event whose idempotency key exists: the partial unique index events_idempotency. */
const ON_IDEMPOTENCY_CONFLICT =
  'ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING';

/**
 * The insert of events (see `insertEvents` below); `keyed`: whether any of them may carry
 * an idempotency key, else without the conflict clause, which keyless events never meet.
 * `columns`: the event columns written (`eventInsertColumns`).
 */
function insertEventsSql(
  t: TableNames,
  keyed: boolean,
  columns: readonly RowColumn<EventRowInput>[],
): string {
  return `
      INSERT INTO ${t.events} (${columnList(columns)})
      SELECT ${jsonColumns(columns, 'j')} FROM json_each($1) AS j WHERE true ORDER BY j.key${
        keyed ? `\n      ${ON_IDEMPOTENCY_CONFLICT}` : ''
      }
      RETURNING id, uuid`;
}

/**
 * The SQLite statements for these tables. `eventColumns`: the event columns the insert
 * writes (`eventInsertColumns` of the outbox's declared ones; EVENT_INSERT_COLUMNS, the
 * statements as they were, for an outbox that declares none).
 */
export function sqliteStatements(
  t: TableNames,
  eventColumns: readonly RowColumn<EventRowInput>[] = EVENT_INSERT_COLUMNS,
) {
  return {
    /**
     * Insert events: $1 a JSON array of `eventColumns` objects, written in array
     * order (so sequences follow the input). One parameter for any number of events:
     * node-sqlite3 binds numbered parameters by name, which grows with the square of their
     * count (2,500 events as VALUES took 4.2 s, as one JSON array 0.09 s). An event whose
     * idempotency key exists is skipped (ON CONFLICT DO NOTHING; `WHERE true` is SQLite's
     * required separator between INSERT … SELECT and its upsert clause). Returns (id, uuid)
     * of each event written. Reads the unique index events_idempotency.
     */
    insertEvents: insertEventsSql(t, true, eventColumns),
    /** The same for events none of which has an idempotency key. */
    insertEventsKeyless: insertEventsSql(t, false, eventColumns),
    /**
     * Insert the delivery rows of the events written: $1 a JSON array of
     * SEQUENCED_DELIVERY_COLUMNS objects (event_id, DELIVERY_INSERT_COLUMNS, ordering_key),
     * in array order. Returns nothing.
     */
    insertDeliveries: `
      INSERT INTO ${t.deliveries} (${columnList(SEQUENCED_DELIVERY_COLUMNS)})
      SELECT ${jsonColumns(SEQUENCED_DELIVERY_COLUMNS, 'j')} FROM json_each($1) AS j ORDER BY j.key`,
    /**
     * Claim the shared `claimCandidates` ($1 worker, $2 claimed at, $3 lease until, $4 now,
     * $5 ignore backoff, $6 limit, $7 ids to leave out, $8 the only ids or NULL; see there)
     * in one UPDATE: SQLite has one writer, so no other claim interleaves. Returns
     * CLAIMED_COLUMNS, unordered. Reads deliveries_queue and deliveries_ordering.
     */
    claim: sqliteClaim(t),
    /**
     * Record many outcomes in one statement: $1 a JSON array of OUTCOME_COLUMNS objects, the
     * shared SET clause. Compare-and-set: only rows still claimed by $2 at $3 change.
     * Reads the primary key.
     */
    record: `
      UPDATE ${t.deliveries} AS d
      SET ${recordSet('d', 'v')}
      FROM ${d.rowsParam(1, 'v', OUTCOME_COLUMNS)}
      WHERE d.id = v.id AND ${heldBy('d', '$2', '$3')}`,
  };
}

/**
 * The claim of one filter shape (see sql/claim-filter.ts; the unfiltered claim without
 * one), its filters' parameters from $9 on.
 */
export function sqliteClaim(t: TableNames, shape?: ClaimShape): string {
  return `
      UPDATE ${t.deliveries} SET status = 'claimed', claimed_by = $1, claimed_at = $2, lease_until = $3
      WHERE id IN (
        ${claimCandidates(t, d, shape)}
      )
      RETURNING ${CLAIMED_COLUMNS()}`;
}

export type SqliteStatements = ReturnType<typeof sqliteStatements>;
