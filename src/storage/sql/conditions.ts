/**
 * The conditions every dialect's delivery queue reads, written once. Each takes the alias
 * of the deliveries row it tests and the parameter texts it compares against, so the
 * PostgreSQL and SQLite statements (and a later MariaDB one) embed the same predicate.
 */
import type { TableNames } from '../tables.js';
import { type ClaimShape, claimFilterSql } from './claim-filter.js';
import type { SqlDialect } from './dialect.js';

// The status lists of migrations 1-3's partial indexes, which those migrations still render
// (a released migration never changes). The queries read migration 4's indexes, on the
// delivery row's phase (phase.ts).

/** Statuses that still owe work: what the claim reads and the ordering check waits on. */
export const OWED = `'pending','failed','claimed'`;
/** The owed statuses a claim takes without a lapsed lease (migration 3's deliveries_ready). */
export const READY = `'pending','failed'`;
/** Terminal statuses that are not a success: dead letters and orphans. */
export const LOST = `'dead','orphaned'`;
/** Statuses that hold back the later events of an ordering key: owed ones, and dead letters. */
export const HOLDS_BACK = `'pending','failed','claimed','dead'`;

/**
 * The compare-and-set of every write that settles a claimed row: the row (columns of
 * `row`, or unqualified when it is undefined) is still claimed by the worker at `worker`,
 * under the claim made at `claimedAt`.
 */
export function heldBy(row: string | undefined, worker: string, claimedAt: string): string {
  const c = row ? `${row}.` : '';
  return `${c}status = 'claimed' AND ${c}claimed_by = ${worker} AND ${c}claimed_at = ${claimedAt}`;
}

/**
 * `row`, an owed row, can be claimed at `now`: pending or failed and available; with
 * `ignoreBackoff` true, also a failed row still waiting out its backoff (but not one whose
 * due time is still ahead).
 */
export function ready(row: string, now: string, ignoreBackoff: string): string {
  return `${row}.status IN (${READY})
            AND (
              ${row}.available_at <= ${now}
              OR (${ignoreBackoff} AND ${row}.status = 'failed' AND (${row}.due_at IS NULL OR ${row}.due_at <= ${now}))
            )`;
}

/** `row`, an owed row, was claimed under a lease that lapsed by `now`. */
export function lapsed(row: string, now: string): string {
  return `${row}.status = 'claimed' AND ${row}.lease_until <= ${now}`;
}

/**
 * `row` is not held back by its ordering key: it has none, or no earlier row of the same
 * receiver, target and key is still owed or dead. Reads the partial index
 * deliveries_ordering (named to MariaDB's planner: {@link SqlDialect.indexHint}).
 */
export function notHeldBack(t: TableNames, d: SqlDialect, row: string): string {
  return `(${row}.ordering_key IS NULL OR NOT EXISTS (
              SELECT 1 FROM ${t.deliveries} p${d.indexHint(`${t.prefix}deliveries_ordering`)}
              WHERE p.receiver_key = ${row}.receiver_key AND p.target = ${row}.target
                AND p.ordering_key = ${row}.ordering_key AND p.event_id < ${row}.event_id
                AND ${d.ddl.phase.holdsBack('p')}
            ))`;
}

/**
 * The rows a claim takes, oldest event first: the ids of up to `$6` owed deliveries at `$4`
 * (`$5` ignore backoff) that are not held back, leaving out the ids of `$7` and, unless `$8`
 * is NULL, considering only those of `$8`. Rows are chosen by event sequence, never by a
 * high-water mark, so a transaction that commits late is not skipped.
 *
 * One scan of the partial index deliveries_queue (the owed rows by event sequence), read in
 * order and stopping after `$6`: a pending or failed row available now, or a claimed one
 * whose lease lapsed (none but after a crash). It steps over the rows other batches hold,
 * a heap visit each: what keeps the claim a HOT update (phase.ts) is that the index holds
 * claimed rows too. `lock` follows: PostgreSQL's `FOR UPDATE SKIP LOCKED`, so N relays split
 * the queue; SQLite (one writer) updates them directly.
 *
 * With a `shape`, the filters it names (lanes as receiver keys, topics, events; see
 * claim-filter.ts) are ANDed, their parameters from `$9` on; without one the text is the
 * unfiltered claim's.
 */
export function claimCandidates(
  t: TableNames,
  d: SqlDialect,
  shape?: ClaimShape,
  lock = '',
): string {
  return `SELECT c.id FROM ${t.deliveries} c
            WHERE ${d.ddl.phase.owed('c')}
              AND ((${ready('c', '$4', d.param(5, 'boolean'))}) OR (${lapsed('c', '$4')}))
              AND NOT (${d.inList('c.id', 7, 'bigint')})
              AND (${d.listIsNull(8, 'bigint')} OR ${d.inList('c.id', 8, 'bigint')})${shape ? claimFilterSql(t, d, shape, 'c') : ''}
              AND ${notHeldBack(t, d, 'c')}
            ORDER BY c.event_id, c.id
            LIMIT $6${lock}`;
}

/**
 * The delivery columns a claim returns (with the event's, read by `EVENT_COLUMNS`),
 * qualified by `row` unless it is undefined (SQLite's RETURNING takes bare names).
 */
export const CLAIMED_COLUMNS = (row?: string): string =>
  ['id', 'event_id', 'receiver_key', 'target', 'attempts', 'max_attempts', 'due_at']
    .map((c) => (row ? `${row}.${c}` : c))
    .join(', ');

/**
 * The SET clause that records an outcome `v` on the delivery row `row`: status and
 * attempts as given; available_at, last_error kept when the outcome has none; due_at moved
 * only by a NotYet (`pending`); succeeded_at stamped only on success; the lease cleared.
 * Unqualified on the left, so it serves `UPDATE … SET` in every dialect.
 */
export function recordSet(row: string, v: string): string {
  return `status = ${v}.status,
          attempts = ${v}.attempts,
          available_at = COALESCE(${v}.available_at, ${row}.available_at),
          due_at = CASE WHEN ${v}.status = 'pending' THEN ${v}.due_at ELSE ${row}.due_at END,
          last_error = COALESCE(${v}.last_error, ${row}.last_error),
          completed_at = ${v}.completed_at,
          succeeded_at = CASE WHEN ${v}.status = 'succeeded' THEN ${v}.completed_at ELSE ${row}.succeeded_at END,
          lease_until = NULL`;
}
