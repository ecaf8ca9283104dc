import { QueryTypes, type Sequelize, Transaction } from 'sequelize';
import type { ResolvedEventColumn } from '../../declare/event-columns.js';
import type { Row } from '../rows.js';
import { toStoredEvent } from '../rows.js';
import { withBatchCompletion } from '../sql/batch-completion.js';
import { ClaimStatements, claimShape } from '../sql/claim-filter.js';
import { eventInsertColumns, OUTCOME_COLUMNS } from '../sql/columns.js';
import type { RowColumn, SqlDialect } from '../sql/dialect.js';
import { migrate } from '../sql/migrate.js';
import { type EventSelector, eventsInKeyOrder, REOPEN_COLUMNS } from '../sql/operations.js';
import type { PruneHost } from '../sql/prune.js';
import { SqlStore } from '../sql/sql-store.js';
import type {
  ClaimedDelivery,
  ClaimOptions,
  ClaimToken,
  DialectCapabilities,
  EventRowInput,
  Outcome,
  Reopening,
  WrittenEvent,
} from '../store.js';
import type { TableNames } from '../tables.js';
import { keySlots, lockSlotsSql } from './key-locks.js';
import { mariadbExclusively, mariadbMigrationProfile } from './migration.js';
import { MARIADB_PRUNE, mariadbPruneDeletes } from './prune.js';
import { backticks, mariadbRunner } from './runner.js';
import {
  type MariadbStatements,
  mariadbClaim,
  mariadbStatements,
  SEQUENCED_DELIVERY_COLUMNS,
  type SequencedDelivery,
} from './statements.js';

/** What differs between the MariaDB and the MySQL store: the spelling and RETURNING. */
export interface MariadbFlavour {
  readonly name: 'mariadb' | 'mysql';
  readonly dialect: SqlDialect;
  readonly capabilities: DialectCapabilities;
  /** Whether `INSERT … RETURNING` hands back the rows written (MariaDB, not MySQL). */
  readonly insertReturning: boolean;
}

/**
 * The MariaDB (and MySQL) store: `FOR UPDATE SKIP LOCKED` claims, so N relays split the
 * queue; the ordering keys' locks as row locks on a slots table (key-locks.ts); no
 * single-writer lock and no LISTEN/NOTIFY. The same class serves Sequelize's `mysql`
 * dialect, reading back what MySQL's missing RETURNING would have handed over.
 */
export class MariadbStore extends SqlStore {
  readonly dialect: 'mariadb' | 'mysql';
  readonly capabilities: DialectCapabilities;
  readonly relayLock = undefined;
  protected readonly pruneDialect = MARIADB_PRUNE;
  readonly #sql: MariadbStatements;
  /** The event columns its insert writes: the library's, then the outbox's declared ones. */
  readonly #eventColumns: readonly RowColumn<EventRowInput>[];
  readonly #returning: boolean;
  readonly #lockSlots: string;
  /** The claim's first step per filter shape. */
  readonly #claims: ClaimStatements<string>;

  /** `eventColumns`: the outbox's declared event columns, written in the insert. */
  constructor(
    sequelize: Sequelize,
    t: TableNames,
    flavour: MariadbFlavour,
    eventColumns: readonly ResolvedEventColumn[] = [],
  ) {
    super(sequelize, t, flavour.dialect, mariadbRunner(sequelize));
    this.dialect = flavour.name;
    this.capabilities = flavour.capabilities;
    this.#returning = flavour.insertReturning;
    this.#eventColumns = eventInsertColumns(eventColumns);
    this.#sql = mariadbStatements(t, this.d, this.#returning, this.#eventColumns);
    this.#lockSlots = lockSlotsSql(t);
    this.#claims = new ClaimStatements(this.#sql.claim, (shape) => mariadbClaim(t, this.d, shape));
  }

  /** Apply the migrations under `GET_LOCK()` (migration.ts); every statement is idempotent. */
  migrate(): Promise<void> {
    const t = this.t;
    const profile = mariadbMigrationProfile(this.d)(t);
    return migrate({
      tables: t,
      dialect: this.d,
      runner: this.runner,
      schema: profile.schema,
      exclusively: mariadbExclusively(this.sequelize, this.runner, `outboxkit:${t.prefix}`),
      prelude: profile.prelude,
      analyze: () => [],
      statementsOf: profile.statementsOf,
    });
  }

  /**
   * The ordering keys' slots locked first (key-locks.ts), then the events, then the
   * delivery rows of those written, then the idempotency tail. One event with one delivery
   * row (most `fire()` calls) binds scalars.
   */
  async insertEvents(
    events: readonly EventRowInput[],
    transaction: Transaction,
  ): Promise<WrittenEvent[]> {
    if (events.length === 0) return [];
    const slots = keySlots(events.map((e) => e.orderingKey));
    if (slots.length > 0)
      await this.runner.select(this.#lockSlots, [JSON.stringify(slots)], transaction);
    const written =
      events.length === 1
        ? await this.#insertOne(events[0] as EventRowInput, transaction)
        : await this.#insertMany(events, transaction);
    const deliveries: SequencedDelivery[] = events.flatMap((e) => {
      const sequence = written.get(e.uuid);
      return sequence === undefined
        ? []
        : e.deliveries.map((delivery) => ({ sequence, orderingKey: e.orderingKey, delivery }));
    });
    if (deliveries.length === 1) {
      const one = deliveries[0] as SequencedDelivery;
      await this.runner.run(
        this.#sql.insertOneDelivery,
        SEQUENCED_DELIVERY_COLUMNS.map((c) => this.d.value(c.value(one), c.type)),
        transaction,
      );
    } else if (deliveries.length > 1) {
      await this.runner.run(
        this.#sql.insertDeliveries,
        this.d.bindRows(deliveries, SEQUENCED_DELIVERY_COLUMNS),
        transaction,
      );
    }
    return this.withRepeats(events, written, transaction);
  }

  /** One event: its row as scalars; its id from RETURNING, else from the OK packet. */
  async #insertOne(e: EventRowInput, transaction: Transaction): Promise<Map<string, string>> {
    const bind = this.#eventColumns.map((c) => this.d.value(c.value(e), c.type));
    if (this.#returning) {
      const rows = await this.runner.select<Row>(this.#sql.insertOneEvent, bind, transaction);
      return writtenOf(rows);
    }
    // An INSERT's answer through Sequelize: [insert id, affected rows]; a duplicate's no-op
    // update affects none.
    const [id, affected] = (await this.sequelize.query(backticks(this.#sql.insertOneEvent), {
      bind,
      type: QueryTypes.INSERT,
      transaction,
      raw: true,
    })) as unknown as [unknown, number];
    return Number(affected) > 0 ? new Map([[e.uuid, String(id)]]) : new Map();
  }

  /** Many events: one JSON array; their ids from RETURNING, else read back by uuid. */
  async #insertMany(
    events: readonly EventRowInput[],
    transaction: Transaction,
  ): Promise<Map<string, string>> {
    const bind = this.d.bindRows(events, this.#eventColumns);
    if (this.#returning)
      return writtenOf(await this.runner.select<Row>(this.#sql.insertEvents, bind, transaction));
    await this.runner.run(this.#sql.insertEvents, bind, transaction);
    const uuids = new Set(events.map((e) => e.uuid));
    const rows = await this.runner.select<Row>(
      this.#sql.idsOfUuids,
      [this.d.list([...uuids], 'uuid')],
      transaction,
    );
    return writtenOf(rows.filter((r) => uuids.has(String(r.uuid))));
  }

  /**
   * The candidates read (statements.ts `mariadbClaim`: more than the limit, so a few another
   * relay is taking at the same moment leave enough), then in one READ COMMITTED transaction
   * (no gap locks: a claim never holds up fire()'s inserts) the first `limit` of them still
   * owed locked `FOR UPDATE SKIP LOCKED` and marked claimed; then the rows and their events
   * read, by event sequence.
   */
  async claim(o: ClaimOptions): Promise<ClaimedDelivery[]> {
    const shape = claimShape(o);
    const bind = this.claimBind({ ...o, limit: candidatesFor(o.limit) }, shape);
    const candidates = (
      await this.runner.select<{ id: unknown }>(this.#claims.of(shape), bind)
    ).map((r) => String(r.id));
    if (candidates.length === 0) return [];
    const ids = await this.sequelize.transaction(
      { isolationLevel: Transaction.ISOLATION_LEVELS.READ_COMMITTED },
      async (transaction) => {
        // The candidates in order, as many at a time as the batch still lacks: each lock
        // takes exactly the rows it returns.
        const taken: string[] = [];
        for (let next = 0; next < candidates.length && taken.length < o.limit; ) {
          const chunk = candidates.slice(next, next + o.limit - taken.length);
          next += chunk.length;
          const rows = await this.runner.select<{ id: unknown }>(
            this.#sql.lockCandidates,
            [
              this.d.list(chunk, 'bigint'),
              this.d.value(o.now, 'timestamp'),
              this.d.value(o.ignoreBackoff ?? false, 'boolean'),
            ],
            transaction,
          );
          for (const r of rows) taken.push(String(r.id));
        }
        if (taken.length === 0) return undefined;
        const list = this.d.list(taken, 'bigint');
        await this.runner.exec(
          this.#sql.markClaimed,
          [...this.tokenBind(o.token), this.d.value(o.leaseUntil, 'timestamp'), list],
          transaction,
        );
        return list;
      },
    );
    if (ids === undefined) return [];
    const rows = await this.runner.select(this.#sql.claimedRows, [ids]);
    return rows.map((r) => this.toClaimed(r, toStoredEvent(r)));
  }

  recordOutcomes(outcomes: readonly Outcome[], token: ClaimToken): Promise<number> {
    if (outcomes.length === 0) return Promise.resolve(0);
    return this.runner.exec(this.#sql.record, [
      ...this.d.bindRows(withBatchCompletion(outcomes), OUTCOME_COLUMNS),
      ...this.tokenBind(token),
    ]);
  }

  /**
   * The shared renewal, whose row count is of the rows CHANGED (runner.ts): a renewal to
   * the lease a row already has counts 0, so a short count is checked against the rows
   * still held.
   */
  override async renewLeases(
    ids: readonly string[],
    token: ClaimToken,
    leaseUntil: Date,
  ): Promise<number> {
    if (ids.length === 0) return 0;
    const changed = await this.runner.exec(this.#sql.renewLeases, [
      ...this.tokenBind(token),
      this.d.value(leaseUntil, 'timestamp'),
      this.d.list(ids, 'bigint'),
    ]);
    if (changed >= ids.length) return changed;
    const [row] = await this.runner.select(this.#sql.countHeld, [
      this.d.list(ids, 'bigint'),
      ...this.tokenBind(token),
    ]);
    return Number(row?.n ?? 0);
  }

  /** The shared hand-back, joined to its list (statements.ts `release`). */
  override release(ids: readonly string[], token: ClaimToken, now: Date): Promise<number> {
    if (ids.length === 0) return Promise.resolve(0);
    return this.runner.exec(this.#sql.release, [
      ...this.tokenBind(token),
      this.d.value(now, 'timestamp'),
      this.d.list(ids, 'bigint'),
    ]);
  }

  #prune: PruneHost | undefined;

  /** The shared prune, its deletes joined to their id lists (prune.ts). */
  protected override get pruneHost(): PruneHost {
    if (!this.#prune) {
      const shared = super.pruneHost;
      this.#prune = { ...shared, sql: mariadbPruneDeletes(this.t, this.d, shared.sql) };
    }
    return this.#prune;
  }

  /** The operations' event lock: the events in primary-key order, `FOR UPDATE`. */
  protected override eventLockSql(by: EventSelector): string {
    return `${eventsInKeyOrder(this.t, this.d, by)}
      FOR UPDATE`;
  }

  /** The shared cancel, its UPDATE joined to its events (statements.ts `cancel`). */
  protected override get cancelSql(): string {
    return this.#sql.cancel;
  }

  /** The shared requeue, joined to its ids (statements.ts `requeue`). */
  override requeueDeliveries(
    ids: readonly string[],
    now: Date,
    transaction: Transaction,
  ): Promise<number> {
    if (ids.length === 0) return Promise.resolve(0);
    return this.runner.exec(
      this.#sql.requeue,
      [this.d.list(ids, 'bigint'), this.d.value(now, 'timestamp')],
      transaction,
    );
  }

  /** A replay's reopening, as a multi-table UPDATE (statements.ts). */
  override reopenDeliveries(rows: readonly Reopening[], transaction: Transaction): Promise<number> {
    if (rows.length === 0) return Promise.resolve(0);
    return this.runner.exec(this.#sql.reopen, this.d.bindRows(rows, REOPEN_COLUMNS), transaction);
  }
}

/**
 * How many candidates a claim of `limit` reads: twice as many and ten more, so the rows
 * other relays are claiming at the same moment (passed over by SKIP LOCKED) still leave a
 * full batch.
 */
const candidatesFor = (limit: number): number => 2 * limit + 10;

/** The (id, uuid) rows of written events, as insertEvents' map of uuid to sequence. */
function writtenOf(rows: readonly Row[]): Map<string, string> {
  return new Map(rows.map((r) => [String(r.uuid), String(r.id)]));
}
