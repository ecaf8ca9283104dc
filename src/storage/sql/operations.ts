/**
 * The statements of the operations an operator runs on delivery rows (src/ops/: cancel,
 * replay, requeue, the dead-letter list), written once for every dialect. Each header
 * gives the statement's contract: parameters, what it returns, which index it reads.
 *
 * Every write carries its own status predicate, because a relay's claim takes no event
 * lock: whatever committed first wins, and the write skips a row the claim took (cancel) or
 * a row settled meanwhile (reopen, requeue). The event locks (postgres/event-locks.ts) only
 * order the operations among themselves and against the prune.
 */
import type { Addition, DeadFilter, Reopening } from '../store.js';
import type { TableNames } from '../tables.js';
import { splitTopics, tenantMatchSql, topicMatchSql } from './claim-filter.js';
import type { RowColumn, SqlDialect } from './dialect.js';

/** The statuses a replay reopens: a delivery that ran (or was withdrawn) and is settled. */
export const TERMINAL = `'succeeded','dead','orphaned','cancelled'`;
/** The statuses a cancel withdraws: unclaimed and still owed. */
export const WITHDRAWABLE = `'pending','failed'`;

/** How {@link eventsInKeyOrder} names its events. */
export type EventSelector = 'uuid' | 'sequence' | 'delivery';

/**
 * The events named by `$1` (a list of uuids, of sequences, or of delivery ids whose events
 * they are), `(id, uuid, name, tenant)` in primary-key order: the order in which every operation that
 * writes an event's rows takes its events' locks (PostgreSQL appends `FOR UPDATE OF e`,
 * see postgres/event-locks.ts; SQLite's write transaction is the one writer and needs no
 * row lock). Reads the events' primary key, or their uuid's unique index.
 */
export function eventsInKeyOrder(t: TableNames, d: SqlDialect, by: EventSelector): string {
  const where =
    by === 'uuid'
      ? d.inList('e.uuid', 1, 'uuid')
      : by === 'sequence'
        ? d.inList('e.id', 1, 'bigint')
        : `e.id IN (SELECT x.event_id FROM ${t.deliveries} x WHERE ${d.inList('x.id', 1, 'bigint')})`;
  return `
      SELECT e.id AS sequence, e.uuid AS uuid, e.name AS name, e.tenant AS tenant FROM ${t.events} e
      WHERE ${where}
      ORDER BY e.id`;
}

/** The columns of {@link Reopening} bound as rows. */
export const REOPEN_COLUMNS: readonly RowColumn<Reopening>[] = [
  { name: 'id', type: 'bigint', value: (r) => r.id },
  { name: 'available_at', type: 'timestamp', value: (r) => r.availableAt },
  { name: 'due_at', type: 'timestamp', value: (r) => r.dueAt },
];

/** The columns of {@link Addition}, in the order the insert writes them. */
export const ADD_COLUMNS: readonly RowColumn<Addition>[] = [
  { name: 'event_id', type: 'bigint', value: (r) => r.eventSequence },
  { name: 'receiver_key', type: 'text', value: (r) => r.receiverKey },
  { name: 'target', type: 'text', value: (r) => r.target },
  { name: 'max_attempts', type: 'integer', value: (r) => r.maxAttempts },
  { name: 'available_at', type: 'timestamp', value: (r) => r.availableAt },
  { name: 'due_at', type: 'timestamp', value: (r) => r.dueAt },
  { name: 'ordering_key', type: 'text', value: (r) => r.orderingKey },
];

export interface OperationStatements {
  readonly cancel: string;
  readonly countClaimed: string;
  readonly deliveriesOfEvents: string;
  readonly reopen: string;
  readonly add: string;
  readonly requeue: string;
  readonly deadLetters: string;
  /** The dead letters of one tenant: `deadLetters` with the tenant's name at $3. */
  readonly deadLettersOfTenant: string;
  /**
   * Dead letters of the events in a list (an operation's `columns`, resolved to events):
   * `deadLetters` with the tenant's name at $3 where `ofTenant`, then the list of sequences.
   */
  deadLettersOfEvents(ofTenant: boolean): string;
  /** The dead rows of a filter; with topics, tenants or events, the text that reads them. */
  deadCandidates(withTopics: boolean, withTenants?: boolean, withEvents?: boolean): string;
  /** How many rows {@link deadCandidates} would return (`requeueDead({ dryRun })`). */
  countDeadCandidates(withTopics: boolean, withTenants?: boolean, withEvents?: boolean): string;
}

export function operationStatements(t: TableNames, d: SqlDialect): OperationStatements {
  /**
   * The scope of a cancel, on the deliveries row: $1 events, $2 receiver, $3 row ids; owed
   * rows only (deliveries_queue, by event), which is all a cancel touches or counts.
   */
  const cancelScope = `${d.inList('event_id', 1, 'bigint')} AND ${d.ddl.phase.owed()}
        AND (${d.param(2, 'text')} IS NULL OR receiver_key = ${d.param(2, 'text')})
        AND (${d.listIsNull(3, 'bigint')} OR ${d.inList('id', 3, 'bigint')})`;
  /**
   * The dead rows a requeue takes, `c.id`: of receiver $1 (NULL: all), among the ids $2
   * (NULL: any), with topics, whose event's topic is one of $4 or starts with one of $5,
   * and with tenants, whose event is one of their tenants' (the list after the topics').
   */
  const deadRows = (
    withTopics: boolean,
    withTenants = false,
    withEvents = false,
  ) => `SELECT c.id FROM ${t.deliveries} c
      WHERE ${d.ddl.phase.dead('c')}
        AND (${d.param(1, 'text')} IS NULL OR c.receiver_key = ${d.param(1, 'text')})
        AND (${d.listIsNull(2, 'bigint')} OR ${d.inList('c.id', 2, 'bigint')})${
          withTopics ? `\n        AND ${topicMatchSql(t, d, 'c', 4, 5)}` : ''
        }${withTenants ? `\n        AND ${tenantMatchSql(t, d, 'c', withTopics ? 6 : 4)}` : ''}${
          withEvents
            ? `\n        AND ${d.inList('c.event_id', 4 + (withTopics ? 2 : 0) + (withTenants ? 1 : 0), 'bigint')}`
            : ''
        }`;
  const deadLetters = (ofTenant: boolean, ofEvents = false) => `
      SELECT d.id, d.event_id, d.receiver_key, d.target, d.attempts, d.max_attempts,
             d.last_error, d.completed_at, e.uuid AS event_uuid, e.name AS event_name,
             e.recorded_at AS event_recorded_at, e.tenant AS event_tenant
      FROM ${t.deliveries} d JOIN ${t.events} e ON e.id = d.event_id
      WHERE ${d.ddl.phase.dead('d')} AND (${d.param(1, 'text')} IS NULL OR d.receiver_key = ${d.param(1, 'text')})${
        ofTenant ? `\n        AND e.tenant = ${d.param(3, 'text')}` : ''
      }${ofEvents ? `\n        AND ${d.inList('d.event_id', ofTenant ? 4 : 3, 'bigint')}` : ''}
      ORDER BY d.completed_at DESC, d.id DESC
      LIMIT $2`;
  return {
    /**
     * Withdraw the unclaimed owed rows (pending, failed) of the events $1 (a list of
     * sequences), of receiver $2 (NULL: every receiver), among the ids $3 (NULL: any; an
     * empty list: none), completed at $4; nothing else touched. The status predicate is in
     * the write, so a row a claim committed first stays claimed. Reads deliveries_queue.
     */
    cancel: `
      UPDATE ${t.deliveries} SET status = 'cancelled', completed_at = $4
      WHERE ${cancelScope}
        AND status IN (${WITHDRAWABLE})`,
    /** The claimed rows in a cancel's scope ($1..$3 as there): `(n)`. Reads deliveries_queue. */
    countClaimed: `
      SELECT count(*) AS n FROM ${t.deliveries}
      WHERE ${cancelScope}
        AND status = 'claimed'`,
    /**
     * Every delivery row of the events $1 (sequences), by event and id: the owed ones
     * (deliveries_queue) and the settled ones (deliveries_settled).
     */
    deliveriesOfEvents: `
      SELECT * FROM (
        SELECT * FROM ${t.deliveries} WHERE ${d.inList('event_id', 1, 'bigint')} AND ${d.ddl.phase.owed()}
        UNION ALL
        SELECT * FROM ${t.deliveries} WHERE ${d.inList('event_id', 1, 'bigint')} AND ${d.ddl.phase.settled()}
      ) x ORDER BY event_id, id`,
    /**
     * Reopen settled rows: $1.. a table of REOPEN_COLUMNS (id, available_at, due_at). Each
     * becomes pending with its attempts at zero and its error cleared, owed from its own
     * times; completed_at and the lease cleared; succeeded_at kept, the receiver's last
     * success being a fact of the past. Only rows still settled change. Reads the primary key.
     */
    reopen: `
      UPDATE ${t.deliveries} AS d
      SET status = 'pending', attempts = 0, last_error = NULL, available_at = v.available_at,
          due_at = v.due_at, completed_at = NULL, lease_until = NULL
      FROM ${d.rowsParam(1, 'v', REOPEN_COLUMNS)}
      WHERE d.id = v.id AND d.status IN (${TERMINAL})`,
    /** Insert delivery rows: $1.. a table of ADD_COLUMNS, pending with no attempt spent. */
    add: `
      INSERT INTO ${t.deliveries} (${ADD_COLUMNS.map((c) => c.name).join(', ')})
      SELECT ${ADD_COLUMNS.map((c) => `x.${c.name}`).join(', ')}
      FROM ${d.rowsParam(1, 'x', ADD_COLUMNS)}`,
    /**
     * Give the dead rows $1 (a list of ids) their budget back: pending, attempts zero, owed
     * from $2 (available_at and due_at), completed_at and the lease cleared; last_error
     * kept, so the reason it died stays readable until an attempt replaces it. Only rows
     * still dead change. Reads the primary key.
     */
    requeue: `
      UPDATE ${t.deliveries}
      SET status = 'pending', attempts = 0, available_at = $2, due_at = $2,
          completed_at = NULL, lease_until = NULL
      WHERE ${d.inList('id', 1, 'bigint')} AND status = 'dead'`,
    /**
     * Dead letters, newest first: of receiver $1 (NULL: all), at most $2. Returns the row's
     * id, receiver, target, attempts, error and completion time with its event's sequence,
     * uuid, name, record time and tenant. Reads every dead row (deliveries_dead_letters).
     */
    deadLetters: deadLetters(false),
    deadLettersOfTenant: deadLetters(true),
    deadLettersOfEvents: (ofTenant) => deadLetters(ofTenant, true),
    /**
     * The ids of up to $3 dead rows, oldest event first (those hold back the most): of
     * receiver $1 (NULL: all), among the ids $2 (NULL: any), and with topics, whose event's
     * topic is one of the names $4 or starts with one of the prefixes $5. Reads every dead
     * row (deliveries_dead_letters).
     */
    deadCandidates: (withTopics, withTenants, withEvents) => `
      ${deadRows(withTopics, withTenants, withEvents)}
      ORDER BY c.event_id, c.id
      LIMIT $3`,
    /** `(n)`: how many dead rows the same filter finds, at most $3. Reads every dead row. */
    countDeadCandidates: (withTopics, withTenants, withEvents) => `
      SELECT count(*) AS n FROM (
      ${deadRows(withTopics, withTenants, withEvents)}
      LIMIT $3) x`,
  };
}

/** The parameters of `deadCandidates`, in its order. */
export function deadCandidatesBind(d: SqlDialect, f: DeadFilter, limit: number): unknown[] {
  const bind: unknown[] = [f.receiverKey ?? null, d.list(f.deliveryIds ?? null, 'bigint'), limit];
  if (f.topics !== undefined) {
    const { names, prefixes } = splitTopics(f.topics);
    bind.push(d.list(names, 'text'), d.list(prefixes, 'text'));
  }
  if (f.tenants !== undefined) bind.push(d.list(f.tenants, 'text'));
  if (f.events !== undefined) bind.push(d.list(f.events, 'bigint'));
  return bind;
}
