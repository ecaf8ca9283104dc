/**
 * The statements that read the same on every dialect, built from a {@link SqlDialect}.
 * Each header gives the statement's contract: parameters, what it returns, which index it
 * reads. UPDATEs return no rows: the runner counts the rows they change.
 */
import { EVENT_COLUMNS } from '../rows.js';
import type { TableNames } from '../tables.js';
import { CLAIMED_COLUMNS, heldBy } from './conditions.js';
import type { SqlDialect } from './dialect.js';

export interface SharedStatements {
  readonly readEvents: string;
  readonly eventsById: string;
  readonly repeats: string;
  readonly renewLeases: string;
  readonly release: string;
  readonly acknowledge: string;
  readonly countDeliveries: string;
  readonly readDeliveries: string;
  readonly takeClaim: string;
  readonly readTaken: string;
}

export function sharedStatements(t: TableNames, d: SqlDialect): SharedStatements {
  return {
    /**
     * Events in sequence order: $1 a name (NULL: any), $2 a list of sequences (NULL: any).
     * Returns `EVENT_COLUMNS`. A maintenance read (assertFired's): by name it scans the
     * events, whose index by name migration 4 dropped for the WAL it cost every event.
     */
    readEvents: `
      SELECT ${EVENT_COLUMNS('e')} FROM ${t.events} e
      WHERE (${d.param(1, 'text')} IS NULL OR e.name = $1)
        AND (${d.listIsNull(2, 'bigint')} OR ${d.inList('e.id', 2, 'bigint')})
      ORDER BY e.id`,
    /**
     * The events of these sequences ($1, a list), unordered: a claim's events, where the
     * dialect cannot join them in the claim itself. Reads the primary key.
     */
    eventsById: `
      SELECT ${EVENT_COLUMNS('e')} FROM ${t.events} e WHERE ${d.inList('e.id', 1, 'bigint')}`,
    /**
     * The idempotency tail of insertEvents: the stored events of these idempotency keys
     * ($1, a list), to return for inputs that wrote nothing. Returns (sequence, uuid,
     * idempotency_key). Reads the unique index on idempotency_key.
     */
    repeats: `
      SELECT id AS sequence, uuid, idempotency_key FROM ${t.events}
      WHERE ${d.inList('idempotency_key', 1, 'text')}`,
    /**
     * Extend the lease to $3 of the rows $4 (a list) still held under the claim of worker
     * $1 at $2. Changes only rows still held (compare-and-set). Reads the primary key.
     */
    renewLeases: `
      UPDATE ${t.deliveries} SET lease_until = $3
      WHERE ${d.inList('id', 4, 'bigint')} AND ${heldBy(undefined, '$1', '$2')}`,
    /**
     * Hand the rows $4 (a list) still held under the claim of worker $1 at $2 back:
     * `failed` if they have spent attempts, else `pending`, available no later than $3, the
     * lease cleared. Reads the primary key.
     */
    release: `
      UPDATE ${t.deliveries}
      SET status = CASE WHEN attempts > 0 THEN 'failed' ELSE 'pending' END,
          available_at = ${d.least('available_at', '$3')}, lease_until = NULL
      WHERE ${d.inList('id', 4, 'bigint')} AND ${heldBy(undefined, '$1', '$2')}`,
    /**
     * Acknowledge one handler's delivery inside the handler's own transaction, so its work
     * and its acknowledgement commit together. Compare-and-set on the claim ($1 worker, $2
     * claimed_at): a worker that lost the row changes nothing and rolls its work back.
     * $3 the row, $4 the completion time. Changes one row when it acknowledged.
     */
    acknowledge: acknowledgeSql(t, { worker: '$1', claimedAt: '$2', ids: 'id = $3', at: '$4' }),
    /**
     * The take under a claim (`deliverOne(id, { claimedBy, claimedAt })`, a task worker's):
     * move the row $6 from the claim of worker $1 at $2 to the claim of worker $3 at $4,
     * leased until $5, only while it is still held under the first claim and its lease has
     * not lapsed at $7 — a second copy of the task (the row already moved), a copy held
     * past its lease and a copy for a settled row all change nothing. Changes one row when
     * it took it. Reads the primary key.
     */
    takeClaim: `
      UPDATE ${t.deliveries} SET claimed_by = $3, claimed_at = $4, lease_until = $5
      WHERE id = ${d.param(6, 'bigint')} AND ${heldBy(undefined, '$1', '$2')} AND lease_until > $7`,
    /**
     * A row just taken under a claim, with its event: `CLAIMED_COLUMNS` and `EVENT_COLUMNS`
     * of the row $1 while it is held by worker $2 under the claim made at $3. Reads the
     * two primary keys.
     */
    readTaken: `
      SELECT ${CLAIMED_COLUMNS('d')}, ${EVENT_COLUMNS('e')}
      FROM ${t.deliveries} d JOIN ${t.events} e ON e.id = d.event_id
      WHERE d.id = ${d.param(1, 'bigint')} AND ${heldBy('d', '$2', '$3')}`,
    /** Deliveries by status: (status, n). A full scan; maintenance only. */
    countDeliveries: `SELECT status, count(*) AS n FROM ${t.deliveries} GROUP BY status`,
    /**
     * Delivery rows, of the event $1 (NULL: all), by event and id: its owed ones
     * (deliveries_queue) and its settled ones (deliveries_settled). Maintenance only.
     */
    readDeliveries: `
      SELECT * FROM (
        SELECT * FROM ${t.deliveries}
        WHERE (${d.param(1, 'bigint')} IS NULL OR event_id = ${d.param(1, 'bigint')}) AND ${d.ddl.phase.owed()}
        UNION ALL
        SELECT * FROM ${t.deliveries}
        WHERE (${d.param(1, 'bigint')} IS NULL OR event_id = ${d.param(1, 'bigint')}) AND ${d.ddl.phase.settled()}
      ) x ORDER BY event_id, id`,
  };
}

/** The parameter (or literal) texts of an acknowledgement, see {@link acknowledgeSql}. */
export interface AcknowledgeTexts {
  readonly worker: string;
  readonly claimedAt: string;
  /** The condition that picks the rows: `id = $3`, `id = ANY($3::bigint[])`. */
  readonly ids: string;
  readonly at: string;
}

/**
 * Mark rows succeeded under a compare-and-set on their claim: one attempt more (the claim
 * never changes `attempts`, and the compare-and-set proves nobody else touched the row
 * since, so `attempts + 1` is the attempt that just went), completed and succeeded at
 * `at`, the lease cleared; `available_at`, `due_at` and `last_error` kept, as
 * `recordSet` keeps them for a success. Written once for the handler's acknowledgement
 * (one row, in its transaction) and the record of a batch that all succeeded (many rows).
 */
export function acknowledgeSql(t: TableNames, x: AcknowledgeTexts): string {
  return `
      UPDATE ${t.deliveries}
      SET status = 'succeeded', attempts = attempts + 1, completed_at = ${x.at}, succeeded_at = ${x.at}, lease_until = NULL
      WHERE ${x.ids} AND ${heldBy(undefined, x.worker, x.claimedAt)}`;
}
