/**
 * The operations every SQL dialect runs the same way, over the shared statements: reads
 * of the event log, the lease, release and acknowledgement of the delivery queue, and
 * maintenance. A dialect's store extends this and writes only what really differs: its
 * insert, its claim, its record, its migrate specifics and its single-writer lock, if any.
 */
import { type Sequelize, Transaction } from 'sequelize';
import type { ResolvedEventColumn } from '../../declare/event-columns.js';
import type { DeliveryStatus } from '../../declare/types.js';
import {
  countsFrom,
  type Row,
  toDate,
  toDateOrNull,
  toDeliveryRow,
  toStoredEvent,
} from '../rows.js';
import type {
  AcknowledgeRequest,
  Addition,
  BacklogRow,
  CancelScope,
  ClaimedDelivery,
  ClaimOptions,
  ClaimToken,
  DeadFilter,
  DeadLetterRow,
  DeliveryRow,
  DialectCapabilities,
  DueEvent,
  EventLockSelection,
  EventRowInput,
  InsertOptions,
  LastSucceededRow,
  LockedEvent,
  OutboxStore,
  Outcome,
  PruneCounts,
  PruneWindow,
  Reopening,
  SingleWriterLock,
  StoredEvent,
  TableColumn,
  WrittenEvent,
} from '../store.js';
import type { TableNames } from '../tables.js';
import { type ClaimShape, claimFilterBind } from './claim-filter.js';
import type { SqlDialect, SqlRunner } from './dialect.js';
import {
  addEventColumnSql,
  createEventColumnIndexSql,
  eventsWithColumnsSql,
  readEventColumnsSql,
  SQL_TYPE_OF,
} from './event-columns.js';
import { healthSql, lastSucceededSql, RECEIVER_KEY_COLUMNS } from './health.js';
import {
  ADD_COLUMNS,
  deadCandidatesBind,
  type EventSelector,
  eventsInKeyOrder,
  type OperationStatements,
  operationStatements,
  REOPEN_COLUMNS,
} from './operations.js';
import {
  countDueEvents,
  deleteDeadDeliveries,
  deleteDueDeliveries,
  deleteDueEvents,
  findDueEvents,
  type PruneDialect,
  type PruneHost,
  pruneStatements,
} from './prune.js';
import { withRepeats } from './repeats.js';
import { type SharedStatements, sharedStatements } from './statements.js';

export abstract class SqlStore implements OutboxStore {
  abstract readonly dialect: string;
  abstract readonly capabilities: DialectCapabilities;
  abstract readonly relayLock: SingleWriterLock | undefined;
  protected readonly shared: SharedStatements;

  protected constructor(
    protected readonly sequelize: Sequelize,
    protected readonly t: TableNames,
    protected readonly d: SqlDialect,
    protected readonly runner: SqlRunner,
  ) {
    this.shared = sharedStatements(t, d);
  }

  abstract migrate(): Promise<void>;
  abstract insertEvents(
    events: readonly EventRowInput[],
    transaction: Transaction,
    options?: InsertOptions,
  ): Promise<WrittenEvent[]>;
  abstract claim(options: ClaimOptions): Promise<ClaimedDelivery[]>;
  abstract recordOutcomes(outcomes: readonly Outcome[], token: ClaimToken): Promise<number>;

  /** The idempotency tail of insertEvents: answer each input, repeats from the stored event. */
  protected withRepeats(
    events: readonly EventRowInput[],
    written: ReadonlyMap<string, string>,
    transaction: Transaction,
  ): Promise<WrittenEvent[]> {
    return withRepeats(
      events,
      written,
      { runner: this.runner, dialect: this.d, repeatsSql: this.shared.repeats },
      transaction,
    );
  }

  /**
   * The claim's parameters, $1..$8, in the order `claimCandidates` documents, then those
   * of the filters of `shape` (sql/claim-filter.ts), if any.
   */
  protected claimBind(o: ClaimOptions, shape?: ClaimShape): unknown[] {
    const d = this.d;
    const filters = shape ? claimFilterBind(o, d, shape) : [];
    return [
      o.token.workerId,
      d.value(o.token.claimedAt, 'timestamp'),
      d.value(o.leaseUntil, 'timestamp'),
      d.value(o.now, 'timestamp'),
      d.value(o.ignoreBackoff ?? false, 'boolean'),
      o.limit,
      d.list(o.excludeIds ?? [], 'bigint'),
      d.list(o.onlyIds ?? null, 'bigint'),
      ...filters,
    ];
  }

  /** The parameters $1, $2 of a compare-and-set on `token`. */
  protected tokenBind(token: ClaimToken): unknown[] {
    return [token.workerId, this.d.value(token.claimedAt, 'timestamp')];
  }

  async describeEventsTable(): Promise<{ columns: TableColumn[]; indexes: string[] }> {
    const spelling = this.d.ddl.eventColumns;
    const c = spelling.columnsSql(this.t);
    const i = spelling.indexesSql(this.t);
    const columns = await this.runner.select<{ name: string; type: string }>(c.sql, [...c.bind]);
    const indexes = await this.runner.select<{ name: string }>(i.sql, [...i.bind]);
    return {
      columns: columns.map((r) => ({ name: String(r.name), type: String(r.type).toLowerCase() })),
      indexes: indexes.map((r) => String(r.name)),
    };
  }

  eventColumnStatements(
    add: readonly ResolvedEventColumn[],
    index: readonly ResolvedEventColumn[],
  ): string[] {
    const spelling = this.d.ddl.eventColumns;
    return [
      ...add.map((c) => addEventColumnSql(this.t, spelling, c)),
      ...index.map((c) => createEventColumnIndexSql(this.t, spelling, c)),
    ];
  }

  async addEventColumns(
    add: readonly ResolvedEventColumn[],
    index: readonly ResolvedEventColumn[],
  ): Promise<void> {
    const statements = this.eventColumnStatements(add, index);
    if (statements.length === 0) return;
    // One transaction: PostgreSQL and SQLite roll back a half-done set; MariaDB commits
    // each DDL statement by itself (a rerun of migrate adds what is still missing).
    await this.sequelize.transaction(async (transaction) => {
      for (const statement of statements) await this.runner.run(statement, [], transaction);
    });
  }

  async readEventColumns(
    sequences: readonly string[],
    columns: readonly ResolvedEventColumn[],
    transaction?: Transaction,
  ): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>();
    if (sequences.length === 0 || columns.length === 0) return found;
    const rows = await this.runner.select(
      readEventColumnsSql(this.t, this.d, columns),
      [this.d.list(sequences, 'bigint')],
      transaction,
    );
    for (const r of rows) found.set(String(r.id), r);
    return found;
  }

  async eventsWithColumns(
    equal: readonly { readonly column: ResolvedEventColumn; readonly value: unknown }[],
  ): Promise<string[]> {
    const shape = equal.map((e) => ({ column: e.column, isNull: e.value === null }));
    const bind = equal
      .filter((e) => e.value !== null)
      .map((e) =>
        this.d.value(e.value as string | number | boolean | Date, SQL_TYPE_OF[e.column.type]),
      );
    const rows = await this.runner.select(eventsWithColumnsSql(this.t, this.d, shape), bind);
    return rows.map((r) => String(r.id));
  }

  async readEvents(
    filter: { name?: string; sequences?: readonly string[] },
    transaction?: Transaction,
  ): Promise<StoredEvent[]> {
    const rows = await this.runner.select(
      this.shared.readEvents,
      [filter.name ?? null, this.d.list(filter.sequences ?? null, 'bigint')],
      transaction,
    );
    return rows.map(toStoredEvent);
  }

  renewLeases(ids: readonly string[], token: ClaimToken, leaseUntil: Date): Promise<number> {
    if (ids.length === 0) return Promise.resolve(0);
    return this.runner.exec(this.shared.renewLeases, [
      ...this.tokenBind(token),
      this.d.value(leaseUntil, 'timestamp'),
      this.d.list(ids, 'bigint'),
    ]);
  }

  async takeClaim(
    id: string,
    from: ClaimToken,
    to: ClaimToken,
    leaseUntil: Date,
    now: Date,
  ): Promise<ClaimedDelivery | undefined> {
    const d = this.d;
    // Outside any transaction: the take commits before anything else runs.
    const taken = await this.runner.exec(this.shared.takeClaim, [
      ...this.tokenBind(from),
      to.workerId,
      d.value(to.claimedAt, 'timestamp'),
      d.value(leaseUntil, 'timestamp'),
      d.value(id, 'bigint'),
      d.value(now, 'timestamp'),
    ]);
    if (taken !== 1) return undefined;
    const [row] = await this.runner.select(this.shared.readTaken, [
      d.value(id, 'bigint'),
      ...this.tokenBind(to),
    ]);
    return row ? this.toClaimed(row, toStoredEvent(row)) : undefined;
  }

  release(ids: readonly string[], token: ClaimToken, now: Date): Promise<number> {
    if (ids.length === 0) return Promise.resolve(0);
    return this.runner.exec(this.shared.release, [
      ...this.tokenBind(token),
      this.d.value(now, 'timestamp'),
      this.d.list(ids, 'bigint'),
    ]);
  }

  async acknowledge(
    id: string,
    token: ClaimToken,
    completedAt: Date,
    transaction: Transaction,
  ): Promise<boolean> {
    const n = await this.runner.exec(
      this.shared.acknowledge,
      [
        ...this.tokenBind(token),
        this.d.value(id, 'bigint'),
        this.d.value(completedAt, 'timestamp'),
      ],
      transaction,
    );
    return n === 1;
  }

  /**
   * Sequelize's own transaction, opened with the dialect's `handlerTransaction` options:
   * BEGIN, the work, the acknowledgement, COMMIT, each its own round trip.
   */
  async handleAndAcknowledge(
    work: (transaction: Transaction) => Promise<void>,
    ack: AcknowledgeRequest,
  ): Promise<'acknowledged' | 'lost'> {
    const type = this.capabilities.handlerTransaction.type;
    try {
      await this.sequelize.transaction(
        type ? { type: Transaction.TYPES[type] } : {},
        async (transaction) => {
          await work(transaction);
          if (!(await this.acknowledge(ack.id, ack.token, ack.at(), transaction)))
            throw new LostClaim();
        },
      );
      return 'acknowledged';
    } catch (error) {
      if (error instanceof LostClaim) return 'lost';
      throw error;
    }
  }

  async countDeliveries(): Promise<Record<DeliveryStatus, number>> {
    return countsFrom(await this.runner.select(this.shared.countDeliveries, []));
  }

  async readDeliveries(filter: { eventSequence?: string }): Promise<DeliveryRow[]> {
    const rows = await this.runner.select(this.shared.readDeliveries, [
      this.d.value(filter.eventSequence ?? null, 'bigint'),
    ]);
    return rows.map(toDeliveryRow);
  }

  // Prune and cleanup (issue 9): sql/prune.ts, with the dialect's part.
  /** What the dialect spells its own way in the prune (postgres/prune.ts, sqlite/prune.ts). */
  protected abstract readonly pruneDialect: PruneDialect;
  #pruneHost: PruneHost | undefined;

  /** The prune's statements and transactions, built on first use. */
  protected get pruneHost(): PruneHost {
    if (!this.#pruneHost) {
      const type = this.capabilities.handlerTransaction.type;
      this.#pruneHost = {
        sequelize: this.sequelize,
        runner: this.runner,
        dialect: this.d,
        sql: pruneStatements(this.t, this.d, this.pruneDialect),
        transaction: (work) =>
          this.sequelize.transaction(type ? { type: Transaction.TYPES[type] } : {}, work),
      };
    }
    return this.#pruneHost;
  }

  findDueEvents(window: PruneWindow, limit: number): Promise<DueEvent[]> {
    return findDueEvents(this.pruneHost, window, limit);
  }

  countDueEvents(window: PruneWindow): Promise<PruneCounts> {
    return countDueEvents(this.pruneHost, window);
  }

  deleteDueEvents(sequences: readonly string[], window: PruneWindow): Promise<PruneCounts> {
    return deleteDueEvents(this.pruneHost, sequences, window);
  }

  deleteDueDeliveries(sequence: string, limit: number, window: PruneWindow): Promise<number> {
    return deleteDueDeliveries(this.pruneHost, sequence, limit, window);
  }

  deleteDeadDeliveries(before: Date, limit: number): Promise<number> {
    return deleteDeadDeliveries(this.pruneHost, before, limit);
  }

  /** A claimed row (`CLAIMED_COLUMNS`) with its event, as the relay takes it. */
  protected toClaimed(r: Row, event: StoredEvent): ClaimedDelivery {
    return {
      id: String(r.id),
      receiverKey: r.receiver_key as string,
      target: r.target as string,
      attempts: Number(r.attempts),
      maxAttempts: Number(r.max_attempts),
      dueAt: toDateOrNull(r.due_at),
      event,
    };
  }

  #backlogSql: string | undefined;
  #tenantBacklogSql: string | undefined;
  #lastSucceededSql: string | undefined;

  async readBacklog(
    now: Date,
    filter: { readonly tenant?: string; readonly events?: readonly string[] } = {},
  ): Promise<BacklogRow[]> {
    const at = this.d.value(now, 'timestamp');
    let rows: Row[];
    if (filter.events !== undefined) {
      if (filter.events.length === 0) return [];
      const ofTenant = filter.tenant !== undefined;
      rows = await this.runner.select(healthSql(this.t, this.d, ofTenant, true), [
        at,
        ...(ofTenant ? [this.d.list([filter.tenant as string], 'text')] : []),
        this.d.list(filter.events, 'bigint'),
      ]);
    } else if (filter.tenant === undefined) {
      this.#backlogSql ??= healthSql(this.t, this.d);
      rows = await this.runner.select(this.#backlogSql, [at]);
    } else {
      this.#tenantBacklogSql ??= healthSql(this.t, this.d, true);
      rows = await this.runner.select(this.#tenantBacklogSql, [
        at,
        this.d.list([filter.tenant], 'text'),
      ]);
    }
    return rows.map((r) => ({
      receiverKey: r.receiver_key as string,
      owed: Number(r.owed),
      oldestOwedAt: toDateOrNull(r.oldest_owed_at),
      scheduled: Number(r.scheduled),
      claimed: Number(r.claimed),
      lapsed: Number(r.lapsed),
      dead: Number(r.dead),
    }));
  }

  async readLastSucceeded(receiverKeys: readonly string[]): Promise<LastSucceededRow[]> {
    if (receiverKeys.length === 0) return [];
    this.#lastSucceededSql ??= lastSucceededSql(this.t, this.d);
    const rows = await this.runner.select(
      this.#lastSucceededSql,
      this.d.bindRows(receiverKeys, RECEIVER_KEY_COLUMNS),
    );
    return rows.map((r) => ({
      receiverKey: r.receiver_key as string,
      live: toDateOrNull(r.live),
      kept: toDateOrNull(r.kept),
    }));
  }

  // --- The operator's operations on rows (src/ops/), over sql/operations.ts.

  /** The operations' statements, built on first use. */
  #ops: OperationStatements | undefined;
  protected get ops(): OperationStatements {
    this.#ops ??= operationStatements(this.t, this.d);
    return this.#ops;
  }

  /**
   * The statement that takes an operation's event locks: the events in primary-key order.
   * Here the plain read, for a dialect whose write transaction is the one writer (SQLite);
   * PostgreSQL locks them `FOR UPDATE` (postgres/event-locks.ts).
   */
  protected eventLockSql(by: EventSelector): string {
    return eventsInKeyOrder(this.t, this.d, by);
  }

  async lockEvents(ids: EventLockSelection, transaction: Transaction): Promise<LockedEvent[]> {
    const [by, list, type] =
      'uuids' in ids
        ? (['uuid', ids.uuids, 'uuid'] as const)
        : 'sequences' in ids
          ? (['sequence', ids.sequences, 'bigint'] as const)
          : (['delivery', ids.deliveryIds, 'bigint'] as const);
    if (list.length === 0) return [];
    const rows = await this.runner.select(
      this.eventLockSql(by),
      [this.d.list(list, type)],
      transaction,
    );
    return rows.map((r) => ({
      sequence: String(r.sequence),
      uuid: String(r.uuid),
      name: String(r.name),
      tenant: (r.tenant as string | null) ?? null,
    }));
  }

  /**
   * The UPDATE that cancels a scope's owed rows (sql/operations.ts `cancel`); a dialect whose
   * server plans the shared form badly gives its own (MariaDB: joined to its lists).
   */
  protected get cancelSql(): string {
    return this.ops.cancel;
  }

  async cancelDeliveries(
    scope: CancelScope,
    completedAt: Date,
    transaction: Transaction,
  ): Promise<{ cancelled: number; inFlight: number }> {
    if (scope.eventSequences.length === 0 || scope.deliveryIds?.length === 0)
      return { cancelled: 0, inFlight: 0 };
    const bind = [
      this.d.list(scope.eventSequences, 'bigint'),
      scope.receiverKey ?? null,
      this.d.list(scope.deliveryIds ?? null, 'bigint'),
    ];
    const cancelled = await this.runner.exec(
      this.cancelSql,
      [...bind, this.d.value(completedAt, 'timestamp')],
      transaction,
    );
    const [claimed] = await this.runner.select(this.ops.countClaimed, bind, transaction);
    return { cancelled, inFlight: Number(claimed?.n ?? 0) };
  }

  async readDeliveriesOfEvents(
    sequences: readonly string[],
    transaction: Transaction,
  ): Promise<DeliveryRow[]> {
    if (sequences.length === 0) return [];
    const rows = await this.runner.select(
      this.ops.deliveriesOfEvents,
      [this.d.list(sequences, 'bigint')],
      transaction,
    );
    return rows.map(toDeliveryRow);
  }

  reopenDeliveries(rows: readonly Reopening[], transaction: Transaction): Promise<number> {
    if (rows.length === 0) return Promise.resolve(0);
    return this.runner.exec(this.ops.reopen, this.d.bindRows(rows, REOPEN_COLUMNS), transaction);
  }

  addDeliveries(rows: readonly Addition[], transaction: Transaction): Promise<number> {
    if (rows.length === 0) return Promise.resolve(0);
    return this.runner.exec(this.ops.add, this.d.bindRows(rows, ADD_COLUMNS), transaction);
  }

  async deadDeliveryIds(
    filter: DeadFilter,
    limit: number,
    transaction: Transaction,
  ): Promise<string[]> {
    if (nothingDead(filter) || limit <= 0) return [];
    const rows = await this.runner.select(
      this.ops.deadCandidates(
        filter.topics !== undefined,
        filter.tenants !== undefined,
        filter.events !== undefined,
      ),
      deadCandidatesBind(this.d, filter, limit),
      transaction,
    );
    return rows.map((r) => String(r.id));
  }

  async countDeadDeliveries(filter: DeadFilter, limit: number): Promise<number> {
    if (nothingDead(filter) || limit <= 0) return 0;
    const [row] = await this.runner.select(
      this.ops.countDeadCandidates(
        filter.topics !== undefined,
        filter.tenants !== undefined,
        filter.events !== undefined,
      ),
      deadCandidatesBind(this.d, filter, limit),
    );
    return Number(row?.n ?? 0);
  }

  requeueDeliveries(ids: readonly string[], now: Date, transaction: Transaction): Promise<number> {
    if (ids.length === 0) return Promise.resolve(0);
    return this.runner.exec(
      this.ops.requeue,
      [this.d.list(ids, 'bigint'), this.d.value(now, 'timestamp')],
      transaction,
    );
  }

  async readDeadLetters(filter: {
    receiverKey?: string;
    limit: number;
    tenant?: string;
    events?: readonly string[];
  }): Promise<DeadLetterRow[]> {
    if (filter.events?.length === 0) return [];
    const rows = await this.runner.select(
      filter.events !== undefined
        ? this.ops.deadLettersOfEvents(filter.tenant !== undefined)
        : filter.tenant === undefined
          ? this.ops.deadLetters
          : this.ops.deadLettersOfTenant,
      [
        filter.receiverKey ?? null,
        filter.limit,
        ...(filter.tenant === undefined ? [] : [filter.tenant]),
        ...(filter.events === undefined ? [] : [this.d.list(filter.events, 'bigint')]),
      ],
    );
    return rows.map((r) => ({
      id: String(r.id),
      eventSequence: String(r.event_id),
      eventUuid: String(r.event_uuid),
      eventName: r.event_name as string,
      eventRecordedAt: toDate(r.event_recorded_at),
      receiverKey: r.receiver_key as string,
      target: r.target as string,
      attempts: Number(r.attempts),
      maxAttempts: Number(r.max_attempts),
      lastError: (r.last_error as string | null) ?? null,
      completedAt: toDateOrNull(r.completed_at),
      eventTenant: (r.event_tenant as string | null) ?? null,
    }));
  }
}

/** A dead-row filter that admits nothing: an empty list of ids, topics or tenants. */
function nothingDead(f: DeadFilter): boolean {
  return (
    f.deliveryIds?.length === 0 ||
    f.topics?.length === 0 ||
    f.tenants?.length === 0 ||
    f.events?.length === 0
  );
}

/** Thrown inside a handler's transaction to roll it back when the acknowledgement lost. */
class LostClaim extends Error {}
