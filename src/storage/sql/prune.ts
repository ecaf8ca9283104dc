/**
 * The prune's statements, written once, and the operations that run them: which events
 * are due, their deletion batch by batch (each re-checking at the delete that the event is
 * still due), the chunked deletion of an event with more deliveries than a batch, and the
 * cleanup of old dead letters. A dialect supplies only what differs ({@link PruneDialect}):
 * the end of an event's own window in SQL, the last-success upsert, and the event lock.
 *
 * Due, read off the row (never the registry, so re-declaring an event changes nothing for
 * rows already written), is one of four branches, one query each:
 *
 * 1. `delete_when = 'succeeded'` and every delivery succeeded or cancelled (partial index
 *    events_delete_succeeded, checked against deliveries_queue and deliveries_unconsumed);
 * 2. `delete_when = 'settled'` and settled (events_delete_settled, against deliveries_queue);
 * 3. a window of its own passed, and settled (events_own_window);
 * 4. no window of its own, recorded before the ordinary window's cutoff, and settled (a
 *    range on events_recorded).
 *
 * Settled: no delivery pending, failed or claimed; an event with no delivery rows is
 * settled (and consumed) by definition. None of the four reads history: with nothing due,
 * a prune costs what the live events with a retention of their own cost.
 */
import type { Sequelize, Transaction } from 'sequelize';
import type { DueEvent, PruneCounts, PruneWindow } from '../store.js';
import type { TableNames } from '../tables.js';
import type { SqlDialect, SqlRunner } from './dialect.js';

/** What a dialect spells its own way in the prune. */
export interface PruneDialect {
  /** The end of the event `e`'s own window: `recorded_at` plus `retention_seconds`. */
  windowEnd(e: string): string;
  /**
   * Record each receiver's newest success among the delivery rows matching `where`
   * (a condition on the deliveries table, unaliased) into the last-success table,
   * keeping the later of that and what the table already holds.
   */
  upsertLastSuccess(t: TableNames, where: string): string;
  /**
   * Lock the events of the list bound at `$1`, in primary-key order (the order cancel,
   * replay and requeue take), or undefined where the transaction itself is the lock
   * (SQLite's IMMEDIATE transaction holds the one write lock).
   */
  lockEvents(t: TableNames): string | undefined;
}

/** Every prune statement of one dialect and table set. */
export interface PruneStatements {
  /** $1 now, $2 cutoff, $3 limit → (id, deliveries) of up to $3 due events, by id. */
  readonly dueRetention: string;
  /** The same for `cleanupPublished`: fully delivered events recorded before $2. */
  readonly duePublished: string;
  /** `dueRetention` and `duePublished` of one tenant's events, $4 the tenant. */
  readonly dueRetentionOfTenant: string;
  readonly duePublishedOfTenant: string;
  /**
   * `dueRetention` and `duePublished` of a list of events (`pruneEvents({ columns })`,
   * resolved to events): the tenant at $4 where `ofTenant`, then the list of sequences.
   */
  dueOfEvents(rule: DueRule, ofTenant: boolean): string;
  /** $1 now, $2 cutoff, $3 a list of event ids → the ids still due. */
  readonly recheckRetention: string;
  readonly recheckPublished: string;
  readonly lock: string | undefined;
  /** Last success of the deliveries of the events $1 (a list). */
  readonly lastSuccessOfEvents: string;
  /** Last success of the delivery rows $1 (a list). */
  readonly lastSuccessOfRows: string;
  /** Delete the deliveries of the events $1 (a list). */
  readonly deleteDeliveriesOfEvents: string;
  /** Delete the events $1 (a list). */
  readonly deleteEvents: string;
  /** $1 an event, $2 a limit → the ids of its first $2 delivery rows. */
  readonly chunkOf: string;
  /** Delete the delivery rows $1 (a list). */
  readonly deleteRows: string;
  /** $1 cutoff, $2 limit → the ids of up to $2 dead rows completed before $1, oldest first. */
  readonly oldDead: string;
  /** Delete the rows $1 (a list) that are still dead. */
  readonly deleteDead: string;
}

/** Which due rule a pass runs: `pruneEvents`' retention, or `cleanupPublished`'s. */
export type DueRule = PruneWindow['rule'];

/**
 * A condition on event `e`: settled, no delivery of it still owed. Reads deliveries_queue
 * (the owed rows, by event).
 */
const settled = (t: TableNames, d: SqlDialect, e: string): string =>
  `NOT EXISTS (SELECT 1 FROM ${t.deliveries} o WHERE o.event_id = ${e}.id AND ${d.ddl.phase.owed('o')})`;

/**
 * Every delivery of `e` succeeded or was cancelled: settled, and none dead or orphaned.
 * Reads deliveries_queue and deliveries_unconsumed.
 */
const consumed = (t: TableNames, d: SqlDialect, e: string): string =>
  `${settled(t, d, e)} AND NOT EXISTS (SELECT 1 FROM ${t.deliveries} u WHERE u.event_id = ${e}.id AND ${d.ddl.phase.lost('u')})`;

/** One branch of due: its condition on `e`, and the order its partial index reads in. */
interface Branch {
  readonly where: string;
  readonly order: string;
}

/** The branches of a rule, with `now` and `cutoff` as parameter texts. */
function branches(
  t: TableNames,
  d: SqlDialect,
  p: PruneDialect,
  rule: DueRule,
  now: string,
  cutoff: string,
): Branch[] {
  const byId = 'e.id';
  const byTime = 'e.recorded_at, e.id';
  if (rule === 'published') {
    // Fully delivered events recorded before the cutoff (which is before now), whatever
    // their retention: the two window indexes between them hold every event.
    const before = `e.recorded_at <= ${cutoff} AND e.recorded_at <= ${now}`;
    return [
      {
        where: `e.retention_seconds IS NULL AND ${before} AND ${consumed(t, d, 'e')}`,
        order: byTime,
      },
      {
        where: `e.retention_seconds IS NOT NULL AND ${before} AND ${consumed(t, d, 'e')}`,
        order: byTime,
      },
    ];
  }
  return [
    { where: `e.delete_when = 'succeeded' AND ${consumed(t, d, 'e')}`, order: byId },
    { where: `e.delete_when = 'settled' AND ${settled(t, d, 'e')}`, order: byId },
    {
      where: `e.retention_seconds IS NOT NULL AND ${p.windowEnd('e')} <= ${now} AND ${settled(t, d, 'e')}`,
      order: byTime,
    },
    {
      where: `e.retention_seconds IS NULL AND e.recorded_at <= ${cutoff} AND ${settled(t, d, 'e')}`,
      order: byTime,
    },
  ];
}

/**
 * The due events of a rule, one query per branch, each its own partial index read in its
 * own order and limited, their union ordered by id and limited again; with each event's
 * number of delivery rows, which sizes the batches: its settled rows (deliveries_settled),
 * every row it has, since a due event owes nothing.
 */
function dueSql(
  t: TableNames,
  d: SqlDialect,
  p: PruneDialect,
  rule: DueRule,
  ofTenant = false,
  ofEvents = false,
): string {
  const now = d.param(1, 'timestamp');
  const cutoff = d.param(2, 'timestamp');
  const limit = d.param(3, 'integer');
  // One tenant's (`pruneEvents({ tenant })`): each branch's index read filtered on the
  // event row, the tenant having no index of its own (a rare, operator-run narrowing).
  // Some events' (`pruneEvents({ columns })`): their list after the tenant, if any.
  const tenant = `${ofTenant ? ` AND e.tenant = ${d.param(4, 'text')}` : ''}${
    ofEvents ? ` AND ${d.inList('e.id', ofTenant ? 5 : 4, 'bigint')}` : ''
  }`;
  const arms = branches(t, d, p, rule, now, cutoff).map(
    (b, i) =>
      `SELECT a${i}.id FROM (SELECT e.id FROM ${t.events} e WHERE ${b.where}${tenant} ORDER BY ${b.order} LIMIT ${limit}) a${i}`,
  );
  return `
      SELECT c.id, (SELECT count(*) FROM ${t.deliveries} n WHERE n.event_id = c.id AND ${d.ddl.phase.settled('n')}) AS deliveries
      FROM (${arms.join('\n        UNION ')}) c
      ORDER BY c.id
      LIMIT ${limit}`;
}

/** The re-check at the delete: which of the events `$3` are still due (primary key). */
function recheckSql(t: TableNames, d: SqlDialect, p: PruneDialect, rule: DueRule): string {
  const any = branches(t, d, p, rule, d.param(1, 'timestamp'), d.param(2, 'timestamp'))
    .map((b) => `(${b.where})`)
    .join(' OR ');
  return `SELECT e.id FROM ${t.events} e WHERE ${d.inList('e.id', 3, 'bigint')} AND (${any}) ORDER BY e.id`;
}

/**
 * Build the prune's statements for a dialect. The rows of the events it deletes are read
 * and deleted through deliveries_settled (`settled` in each statement): they are every row
 * those events have, because each statement runs after the re-check that they are still
 * due (settled: nothing owed) under the event lock, and only operations that take that
 * lock (replay, requeue) make a settled row owed again or add one.
 */
export function pruneStatements(t: TableNames, d: SqlDialect, p: PruneDialect): PruneStatements {
  const settled = d.ddl.phase.settled();
  return {
    dueRetention: dueSql(t, d, p, 'retention'),
    duePublished: dueSql(t, d, p, 'published'),
    dueRetentionOfTenant: dueSql(t, d, p, 'retention', true),
    duePublishedOfTenant: dueSql(t, d, p, 'published', true),
    dueOfEvents: (rule, ofTenant) => dueSql(t, d, p, rule, ofTenant, true),
    recheckRetention: recheckSql(t, d, p, 'retention'),
    recheckPublished: recheckSql(t, d, p, 'published'),
    lock: p.lockEvents(t),
    lastSuccessOfEvents: p.upsertLastSuccess(
      t,
      `${d.inList('event_id', 1, 'bigint')} AND ${settled}`,
    ),
    lastSuccessOfRows: p.upsertLastSuccess(t, d.inList('id', 1, 'bigint')),
    deleteDeliveriesOfEvents: `DELETE FROM ${t.deliveries} WHERE ${d.inList('event_id', 1, 'bigint')} AND ${settled}`,
    deleteEvents: `DELETE FROM ${t.events} WHERE ${d.inList('id', 1, 'bigint')}`,
    chunkOf: `SELECT id FROM ${t.deliveries} WHERE event_id = ${d.param(1, 'bigint')} AND ${settled} ORDER BY id LIMIT ${d.param(2, 'integer')}`,
    deleteRows: `DELETE FROM ${t.deliveries} WHERE ${d.inList('id', 1, 'bigint')}`,
    oldDead: `SELECT id FROM ${t.deliveries} WHERE ${d.ddl.phase.dead()} AND completed_at <= ${d.param(1, 'timestamp')} ORDER BY completed_at, id LIMIT ${d.param(2, 'integer')}`,
    deleteDead: `DELETE FROM ${t.deliveries} WHERE ${d.inList('id', 1, 'bigint')} AND status = 'dead'`,
  };
}

/** What the prune's operations need of a store. */
export interface PruneHost {
  readonly sequelize: Sequelize;
  readonly runner: SqlRunner;
  readonly dialect: SqlDialect;
  readonly sql: PruneStatements;
  /** Open a write transaction (SQLite: IMMEDIATE, so the re-check and the delete are one). */
  transaction<T>(work: (transaction: Transaction) => Promise<T>): Promise<T>;
}

const ALL = 2_147_483_647;

/** The due events of `w`, up to `limit`, by id, each with its number of delivery rows. */
export async function findDueEvents(
  h: PruneHost,
  w: PruneWindow,
  limit: number,
): Promise<DueEvent[]> {
  const d = h.dialect;
  const bind = [d.value(w.now, 'timestamp'), d.value(w.cutoff, 'timestamp'), Math.min(limit, ALL)];
  if (w.events !== undefined) {
    if (w.events.length === 0) return [];
    const ofTenant = w.tenant !== undefined;
    const rows = await h.runner.select<{ id: unknown; deliveries: unknown }>(
      h.sql.dueOfEvents(w.rule, ofTenant),
      [...bind, ...(ofTenant ? [w.tenant] : []), d.list(w.events, 'bigint')],
    );
    return rows.map((r) => ({ sequence: String(r.id), deliveries: Number(r.deliveries) }));
  }
  const sql =
    w.tenant === undefined
      ? w.rule === 'published'
        ? h.sql.duePublished
        : h.sql.dueRetention
      : w.rule === 'published'
        ? h.sql.duePublishedOfTenant
        : h.sql.dueRetentionOfTenant;
  const rows = await h.runner.select<{ id: unknown; deliveries: unknown }>(
    sql,
    w.tenant === undefined ? bind : [...bind, w.tenant],
  );
  return rows.map((r) => ({ sequence: String(r.id), deliveries: Number(r.deliveries) }));
}

/** How many events (and their delivery rows) are due under `w`, deleting nothing. */
export async function countDueEvents(h: PruneHost, w: PruneWindow): Promise<PruneCounts> {
  const due = await findDueEvents(h, w, ALL);
  return { events: due.length, deliveries: due.reduce((n, e) => n + e.deliveries, 0) };
}

/** Lock the events (where the dialect locks rows), then re-check which are still due. */
async function stillDue(
  h: PruneHost,
  sequences: readonly string[],
  w: PruneWindow,
  transaction: Transaction,
): Promise<string[]> {
  const d = h.dialect;
  const ids = d.list(sequences, 'bigint');
  if (h.sql.lock) await h.runner.select(h.sql.lock, [ids], transaction);
  const rows = await h.runner.select<{ id: unknown }>(
    w.rule === 'published' ? h.sql.recheckPublished : h.sql.recheckRetention,
    [d.value(w.now, 'timestamp'), d.value(w.cutoff, 'timestamp'), ids],
    transaction,
  );
  return rows.map((r) => String(r.id));
}

/**
 * Delete the events of `sequences` that are still due, with their delivery rows, in one
 * transaction that first writes each receiver's newest success among them to the
 * last-success table. An event no longer due (replayed, requeued, or already deleted by
 * another pruner) is left alone.
 */
export function deleteDueEvents(
  h: PruneHost,
  sequences: readonly string[],
  w: PruneWindow,
): Promise<PruneCounts> {
  if (sequences.length === 0) return Promise.resolve({ events: 0, deliveries: 0 });
  return h.transaction(async (transaction) => {
    const due = await stillDue(h, sequences, w, transaction);
    if (due.length === 0) return { events: 0, deliveries: 0 };
    const ids = [h.dialect.list(due, 'bigint')];
    await h.runner.run(h.sql.lastSuccessOfEvents, ids, transaction);
    const deliveries = await h.runner.exec(h.sql.deleteDeliveriesOfEvents, ids, transaction);
    const events = await h.runner.exec(h.sql.deleteEvents, ids, transaction);
    return { events, deliveries };
  });
}

/**
 * Delete up to `limit` delivery rows of one due event (its first, by id), in a transaction
 * of their own, recording their receivers' newest success. Returns how many went: 0 when
 * the event is no longer due. The event row stays, for the batch that takes its last rows.
 */
export function deleteDueDeliveries(
  h: PruneHost,
  sequence: string,
  limit: number,
  w: PruneWindow,
): Promise<number> {
  return h.transaction(async (transaction) => {
    if ((await stillDue(h, [sequence], w, transaction)).length === 0) return 0;
    const d = h.dialect;
    const rows = await h.runner.select<{ id: unknown }>(
      h.sql.chunkOf,
      [d.value(sequence, 'bigint'), limit],
      transaction,
    );
    if (rows.length === 0) return 0;
    const ids = [
      d.list(
        rows.map((r) => String(r.id)),
        'bigint',
      ),
    ];
    await h.runner.run(h.sql.lastSuccessOfRows, ids, transaction);
    return h.runner.exec(h.sql.deleteRows, ids, transaction);
  });
}

/**
 * Delete up to `limit` dead delivery rows completed before `before`, oldest first, in one
 * short transaction; a row requeued meanwhile (no longer dead) is left. Returns how many.
 */
export function deleteDeadDeliveries(h: PruneHost, before: Date, limit: number): Promise<number> {
  return h.transaction(async (transaction) => {
    const d = h.dialect;
    const rows = await h.runner.select<{ id: unknown }>(
      h.sql.oldDead,
      [d.value(before, 'timestamp'), limit],
      transaction,
    );
    if (rows.length === 0) return 0;
    return h.runner.exec(
      h.sql.deleteDead,
      [
        d.list(
          rows.map((r) => String(r.id)),
          'bigint',
        ),
      ],
      transaction,
    );
  });
}
