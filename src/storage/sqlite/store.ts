import type { Sequelize, Transaction } from 'sequelize';
import type { ResolvedEventColumn } from '../../declare/event-columns.js';
import { toStoredEvent } from '../rows.js';
import { withBatchCompletion } from '../sql/batch-completion.js';
import { ClaimStatements, claimShape } from '../sql/claim-filter.js';
import { eventInsertColumns, OUTCOME_COLUMNS } from '../sql/columns.js';
import type { RowColumn } from '../sql/dialect.js';
import { migrate } from '../sql/migrate.js';
import { SqlStore } from '../sql/sql-store.js';
import type {
  ClaimedDelivery,
  ClaimOptions,
  ClaimToken,
  EventRowInput,
  Outcome,
  WrittenEvent,
} from '../store.js';
import type { TableNames } from '../tables.js';
import { SQLITE_CAPABILITIES } from './capabilities.js';
import { configureConnections } from './connections.js';
import { sqliteDialect } from './dialect.js';
import { SQLITE_BEFORE_MIGRATE, sqliteExclusively, sqliteMigrationProfile } from './migration.js';
import { SQLITE_PRUNE } from './prune.js';
import { SqliteRelayLock } from './relay-lock.js';
import { sqliteRunner } from './runner.js';
import {
  SEQUENCED_DELIVERY_COLUMNS,
  type SqliteStatements,
  sqliteClaim,
  sqliteStatements,
} from './statements.js';

/**
 * The SQLite store, the embedded default: the demo, a first run and most unit tests use it.
 *
 * SQLite has one writer at a time and no skipped locks, so two relays would claim the
 * same rows: the relay takes the lease-based single-relay lock ({@link relayLock}) instead
 * (see runRelay's `allowUnsafeConcurrency`). Every connection Sequelize opens gets a busy
 * timeout, so a writer waits for the lock instead of failing with SQLITE_BUSY.
 */
export class SqliteStore extends SqlStore {
  readonly dialect = 'sqlite' as const;
  readonly capabilities = SQLITE_CAPABILITIES;
  readonly relayLock: SqliteRelayLock;
  protected readonly pruneDialect = SQLITE_PRUNE;
  readonly #sql: SqliteStatements;
  /** The event columns its insert writes: the library's, then the outbox's declared ones. */
  readonly #eventColumns: readonly RowColumn<EventRowInput>[];
  /** The claim's text per filter shape. */
  readonly #claims: ClaimStatements<string>;

  /** `eventColumns`: the outbox's declared event columns, written in the insert. */
  constructor(
    sequelize: Sequelize,
    t: TableNames,
    eventColumns: readonly ResolvedEventColumn[] = [],
  ) {
    super(sequelize, t, sqliteDialect, sqliteRunner(sequelize));
    configureConnections(sequelize);
    this.#eventColumns = eventInsertColumns(eventColumns);
    this.#sql = sqliteStatements(t, this.#eventColumns);
    this.#claims = new ClaimStatements(this.#sql.claim, (shape) => sqliteClaim(t, shape));
    this.relayLock = new SqliteRelayLock(this.runner, t, this.d);
  }

  /**
   * Apply the migrations in an IMMEDIATE transaction, which holds SQLite's write lock from
   * its start, so two processes migrating at once run one after the other. The database
   * is switched to WAL first, so readers never wait for the relay's writes.
   */
  async migrate(): Promise<void> {
    for (const statement of SQLITE_BEFORE_MIGRATE) await this.runner.run(statement, []);
    const profile = sqliteMigrationProfile();
    await migrate({
      tables: this.t,
      dialect: this.d,
      runner: this.runner,
      schema: profile.schema,
      exclusively: sqliteExclusively(this.sequelize),
      prelude: profile.prelude,
      analyze: () => [],
    });
  }

  /**
   * The events in one statement, then the delivery rows of those written in another, then
   * the idempotency tail (see `sqliteStatements`).
   */
  async insertEvents(
    events: readonly EventRowInput[],
    transaction: Transaction,
  ): Promise<WrittenEvent[]> {
    if (events.length === 0) return [];
    const d = this.d;
    const keyed = events.some((e) => e.idempotencyKey !== null);
    const rows = await this.runner.select<{ id: number; uuid: string }>(
      keyed ? this.#sql.insertEvents : this.#sql.insertEventsKeyless,
      d.bindRows(events, this.#eventColumns),
      transaction,
    );
    const written = new Map(rows.map((r) => [r.uuid, String(r.id)]));
    const deliveries = events.flatMap((e) => {
      const sequence = written.get(e.uuid);
      return sequence === undefined
        ? []
        : e.deliveries.map((delivery) => ({ sequence, orderingKey: e.orderingKey, delivery }));
    });
    if (deliveries.length > 0)
      await this.runner.run(
        this.#sql.insertDeliveries,
        d.bindRows(deliveries, SEQUENCED_DELIVERY_COLUMNS),
        transaction,
      );
    return this.withRepeats(events, written, transaction);
  }

  /** The shared claim in one UPDATE, then its events by id; by event sequence. */
  async claim(o: ClaimOptions): Promise<ClaimedDelivery[]> {
    const shape = claimShape(o);
    const claimed = await this.runner.select(this.#claims.of(shape), this.claimBind(o, shape));
    if (claimed.length === 0) return [];
    const ids = [...new Set(claimed.map((r) => String(r.event_id)))];
    const events = new Map(
      (await this.runner.select(this.shared.eventsById, [this.d.list(ids, 'bigint')])).map((r) => {
        const event = toStoredEvent(r);
        return [event.sequence, event];
      }),
    );
    claimed.sort((a, b) => Number(a.event_id) - Number(b.event_id) || Number(a.id) - Number(b.id));
    return claimed.map((r) => this.toClaimed(r, events.get(String(r.event_id))!));
  }

  recordOutcomes(outcomes: readonly Outcome[], token: ClaimToken): Promise<number> {
    if (outcomes.length === 0) return Promise.resolve(0);
    return this.runner.exec(this.#sql.record, [
      ...this.d.bindRows(withBatchCompletion(outcomes), OUTCOME_COLUMNS),
      ...this.tokenBind(token),
    ]);
  }
}
