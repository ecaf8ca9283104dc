import { createHash } from 'node:crypto';
import type { Sequelize, Transaction } from 'sequelize';
import type { ResolvedEventColumn } from '../../declare/event-columns.js';
import { connectionOf } from '../../sequelize/internals.js';
import { type Row, toStoredEvent } from '../rows.js';
import { ClaimStatements, claimShape } from '../sql/claim-filter.js';
import { eventInsertColumns, OUTCOME_COLUMNS } from '../sql/columns.js';
import type { RowColumn } from '../sql/dialect.js';
import { migrate } from '../sql/migrate.js';
import type { EventSelector } from '../sql/operations.js';
import { SqlStore } from '../sql/sql-store.js';
import { acknowledgeSql } from '../sql/statements.js';
import type {
  AcknowledgeRequest,
  ClaimedDelivery,
  ClaimOptions,
  ClaimToken,
  DeliveryRowInput,
  EventRowInput,
  InsertOptions,
  Outcome,
  WrittenEvent,
} from '../store.js';
import type { TableNames } from '../tables.js';
import { AcknowledgementGroups } from './ack-groups.js';
import { POSTGRES_CAPABILITIES } from './capabilities.js';
import { postgresDialect } from './dialect.js';
import { lockEventsSql } from './event-locks.js';
import {
  canRunLean,
  failingWhenLost,
  type LeanAcknowledgement,
  runLeanTransaction,
} from './handler-transaction.js';
import { postgresExclusively, postgresMigrationProfile } from './migration.js';
import {
  isPgClient,
  type PgClient,
  type PgResult,
  type PgStatement,
  runPooled,
  runStatement,
} from './pg-client.js';
import { POSTGRES_PRUNE } from './prune.js';
import { postgresRunner } from './runner.js';
import {
  bindJsonColumns,
  insertOneValues,
  JSON_INSERT_FROM,
  KEYED_DELIVERY_COLUMNS,
  type PostgresStatements,
  postgresClaim,
  postgresStatements,
  postgresTakeClaim,
} from './statements.js';

/**
 * The PostgreSQL store: JSONB columns, partial indexes, `FOR UPDATE SKIP LOCKED` claims so
 * N relays split the queue, and `LISTEN/NOTIFY` wakeups sent from inside the write. It
 * needs no single-writer lock.
 */
export class PostgresStore extends SqlStore {
  readonly dialect = 'postgres' as const;
  readonly capabilities = POSTGRES_CAPABILITIES;
  readonly relayLock = undefined;
  protected readonly pruneDialect = POSTGRES_PRUNE;
  readonly #sql: PostgresStatements;
  /** The event columns its insert writes: the library's, then the outbox's declared ones. */
  readonly #eventColumns: readonly RowColumn<EventRowInput>[];
  /** The name fire()'s statement is prepared under: a hash of its text, so it never clashes. */
  readonly #insertName: string;
  /** The name its JSON form, for large batches, is prepared under. */
  readonly #insertJsonName: string;
  /** The name its one-event form, fire()'s common case, is prepared under. */
  readonly #insertOneName: string;
  /** The names of the three forms for events without an idempotency key. */
  readonly #insertKeylessName: string;
  readonly #insertJsonKeylessName: string;
  readonly #insertOneKeylessName: string;
  /** The names the relay's other hot statements are prepared under. */
  readonly #ackName: string;
  readonly #ackManyName: string;
  /** Handlers' acknowledgements that commit on their own, grouped (ack-groups.ts). */
  readonly #acks = new AcknowledgementGroups(async (ids, token, at) => {
    const { rows } = await this.#pooled(this.#ackManyName, this.#sql.acknowledgeMany, [
      ...this.tokenBind(token),
      bigintArrayLiteral(ids),
      at,
    ]);
    return new Set((rows as { id: string }[]).map((r) => r.id));
  });
  readonly #recordName: string;
  readonly #recordSucceededName: string;
  readonly #recordMixedName: string;
  /** The claim's text and prepared name per filter shape (the unfiltered one prepared first). */
  readonly #claims: ClaimStatements<{ name: string; text: string }>;

  constructor(
    sequelize: Sequelize,
    t: TableNames,
    /** The LISTEN/NOTIFY channel to signal in the write's own transaction, if any. */
    private readonly notifyChannel: string | undefined,
    /** Whether the hot statements may be named prepared statements (see createOutbox). */
    private readonly preparedStatements = true,
    /** The outbox's declared event columns, written in the insert (`StoreOptions.eventColumns`). */
    eventColumns: readonly ResolvedEventColumn[] = [],
  ) {
    super(sequelize, t, postgresDialect, postgresRunner(sequelize));
    this.#eventColumns = eventInsertColumns(eventColumns);
    this.#sql = postgresStatements(t, notifyChannel, this.#eventColumns);
    this.#insertName = preparedName('insert', this.#sql.insertEvents);
    this.#insertJsonName = preparedName('insert_json', this.#sql.insertEventsJson);
    this.#insertOneName = preparedName('insert_one', this.#sql.insertOne);
    this.#insertKeylessName = preparedName('insert', this.#sql.insertEventsKeyless);
    this.#insertJsonKeylessName = preparedName('insert_json', this.#sql.insertEventsJsonKeyless);
    this.#insertOneKeylessName = preparedName('insert_one', this.#sql.insertOneKeyless);
    this.#ackName = preparedName('ack', this.#sql.acknowledge);
    this.#ackManyName = preparedName('ack_many', this.#sql.acknowledgeMany);
    this.#claims = new ClaimStatements(
      { name: preparedName('claim', this.#sql.claim), text: this.#sql.claim },
      // A filtered claim (a lane, topics, an eager attempt): its shape's own statement,
      // prepared under a name of its own; the unfiltered claim stays the one above.
      (shape) => {
        const text = postgresClaim(t, shape);
        return { name: preparedName('claim', text), text };
      },
    );
    this.#recordName = preparedName('record', this.#sql.record);
    this.#recordSucceededName = preparedName('record_ok', this.#sql.recordSucceeded);
    this.#recordMixedName = preparedName('record_mixed', this.#sql.recordMixed);
  }

  /** The store role's `notifyInTransaction`: one `pg_notify` per topic, in `transaction`. */
  async notifyInTransaction(topics: readonly string[], transaction: Transaction): Promise<void> {
    if (!this.notifyChannel || topics.length === 0) return;
    await this.runner.run(
      'SELECT pg_notify($1, t) FROM unnest($2::text[]) AS t',
      [this.notifyChannel, [...new Set(topics)]],
      transaction,
    );
  }

  /**
   * Run one of the relay's statements on a pool connection of its own, prepared under
   * `name` (unnamed with `preparedStatements: false`), see pg-client.ts.
   */
  #pooled(name: string, text: string, values: unknown[]): Promise<PgResult> {
    return runPooled(this.sequelize, this.#statement(name, text, values));
  }

  /** A statement named `name` to run prepared, or unnamed with `preparedStatements: false`. */
  #statement(name: string, text: string, values: unknown[]): PgStatement {
    return this.preparedStatements ? { name, text, values } : { text, values };
  }

  /**
   * Run a statement as a named prepared statement on the transaction's own connection,
   * which PostgreSQL parses and plans once per connection instead of on every call: on
   * `fire()`'s hot path that is most of the statement's cost (0.51 ms → 0.17 ms measured).
   * It goes through the same connection, in the same transaction, as Sequelize's queries;
   * without a pg connection at hand it falls back to an ordinary query.
   */
  async #prepared<T>(
    name: string,
    text: string,
    values: unknown[],
    transaction: Transaction,
  ): Promise<{ rows: T[]; rowCount: number }> {
    // A relay handler's transaction takes its connection on first use (a promise until
    // then, see handler-transaction.ts): awaited then, as Sequelize's own query path does;
    // fire()'s ordinary transaction holds its client already and pays no extra tick.
    const held = connectionOf(transaction);
    const client = isPgClient(held) ? held : await held;
    if (!this.preparedStatements || !isPgClient(client)) {
      const [rows, meta] = (await this.sequelize.query(text, {
        bind: values,
        transaction,
        raw: true,
      })) as [T[], { rowCount?: number | null }];
      return { rows, rowCount: meta?.rowCount ?? rows.length };
    }
    const result = await runStatement(client, { name, text, values });
    return { rows: result.rows as T[], rowCount: result.rowCount ?? result.rows.length };
  }

  /**
   * Apply the migrations under an advisory lock held for the transaction, so two
   * processes migrating at once run them one after the other; every statement is
   * `IF NOT EXISTS`, so a second run changes nothing. The tables a run creates are
   * ANALYZEd in the same transaction.
   */
  migrate(): Promise<void> {
    const t = this.t;
    const lockKey = `outboxkit:${t.schema ?? 'public'}:${t.prefix}`;
    const profile = postgresMigrationProfile(t);
    return migrate({
      tables: t,
      dialect: this.d,
      runner: this.runner,
      schema: profile.schema,
      exclusively: postgresExclusively(this.sequelize, this.runner, lockKey),
      prelude: profile.prelude,
      analyze: (tables) => tables.map((table) => `ANALYZE ${table}`),
    });
  }

  /**
   * One statement for any number of events (see `postgresStatements().insertEvents`): a
   * large batch (from JSON_INSERT_FROM events) binds its columns as JSON arrays, which
   * node-postgres sends without serialising each element in JavaScript; one event with
   * one delivery row, most `fire()` calls, binds scalars (`insertOne`), the cheapest
   * statement for it. Events none of which has an idempotency key take the form of each
   * without ON CONFLICT (`…Keyless`): they cannot conflict, and the clause would have
   * PostgreSQL insert each speculatively, a WAL record more per event.
   */
  async insertEvents(
    events: readonly EventRowInput[],
    transaction: Transaction,
    options?: InsertOptions,
  ): Promise<WrittenEvent[]> {
    if (events.length === 0) return [];
    const one = events.length === 1 ? events[0] : undefined;
    // A NULL channel queues no NOTIFY (the statements' `WHERE $n IS NOT NULL`).
    const channel = options?.notify === false ? null : this.notifyChannel;
    const written =
      one?.deliveries.length === 1
        ? await this.#insertOne(one, one.deliveries[0] as DeliveryRowInput, transaction, channel)
        : await this.#insertMany(events, transaction, channel);
    return this.withRepeats(events, new Map(written.map((r) => [r.uuid, r.sequence])), transaction);
  }

  /** `insertOne`: one event and its one delivery row, as scalar parameters. */
  async #insertOne(
    event: EventRowInput,
    delivery: DeliveryRowInput,
    transaction: Transaction,
    channel: string | null | undefined,
  ): Promise<{ sequence: string; uuid: string }[]> {
    const bind = insertOneValues(event, delivery, this.#eventColumns);
    if (this.notifyChannel) bind.push(channel);
    const keyed = event.idempotencyKey !== null;
    const { rows } = await this.#prepared<{ sequence: string; uuid: string }>(
      keyed ? this.#insertOneName : this.#insertOneKeylessName,
      keyed ? this.#sql.insertOne : this.#sql.insertOneKeyless,
      bind,
      transaction,
    );
    return rows;
  }

  /** `insertEvents` or, for a large batch, `insertEventsJson`: columns as arrays. */
  async #insertMany(
    events: readonly EventRowInput[],
    transaction: Transaction,
    channel: string | null | undefined,
  ): Promise<{ sequence: string; uuid: string }[]> {
    const deliveries = events.flatMap((e) =>
      e.deliveries.map((delivery) => ({ eventUuid: e.uuid, delivery })),
    );
    const jsonEvents =
      events.length >= JSON_INSERT_FROM ? bindJsonColumns(events, this.#eventColumns) : undefined;
    const jsonDeliveries = jsonEvents && bindJsonColumns(deliveries, KEYED_DELIVERY_COLUMNS);
    const json = jsonDeliveries !== undefined;
    const bind: unknown[] = json
      ? [...(jsonEvents ?? []), ...jsonDeliveries]
      : [
          ...this.d.bindRows(events, this.#eventColumns),
          ...this.d.bindRows(deliveries, KEYED_DELIVERY_COLUMNS),
        ];
    if (this.notifyChannel) bind.push(channel);
    const keyed = events.some((e) => e.idempotencyKey !== null);
    const [name, text] = json
      ? keyed
        ? [this.#insertJsonName, this.#sql.insertEventsJson]
        : [this.#insertJsonKeylessName, this.#sql.insertEventsJsonKeyless]
      : keyed
        ? [this.#insertName, this.#sql.insertEvents]
        : [this.#insertKeylessName, this.#sql.insertEventsKeyless];
    const { rows } = await this.#prepared<{ sequence: string; uuid: string }>(
      name,
      text,
      bind,
      transaction,
    );
    return rows;
  }

  /**
   * Prepared: its plan must hold on a large table once PostgreSQL switches the prepared
   * statement to a generic plan after five runs (test/storage/claim-plan.test.ts pins it).
   */
  async claim(o: ClaimOptions): Promise<ClaimedDelivery[]> {
    const shape = claimShape(o);
    const { name, text } = this.#claims.of(shape);
    const { rows } = await this.#pooled(name, text, this.claimBind(o, shape));
    return (rows as Row[]).map((r) => this.toClaimed(r, toStoredEvent(r)));
  }

  /** The take under a claim in one statement (`postgresTakeClaim`), prepared. */
  override async takeClaim(
    id: string,
    from: ClaimToken,
    to: ClaimToken,
    leaseUntil: Date,
    now: Date,
  ): Promise<ClaimedDelivery | undefined> {
    this.#takeText ??= postgresTakeClaim(this.t);
    const { rows } = await this.#pooled(preparedName('take', this.#takeText), this.#takeText, [
      ...this.tokenBind(from),
      to.workerId,
      to.claimedAt,
      leaseUntil,
      id,
      now,
    ]);
    const [row] = rows as Row[];
    return row ? this.toClaimed(row, toStoredEvent(row)) : undefined;
  }

  #takeText: string | undefined;

  /**
   * One prepared statement for the batch, in the cheapest form its outcomes allow: every
   * row succeeded (the common case) — their ids and one completion time, the batch's last
   * (`recordSucceeded`, see sql/batch-completion.ts); none did — the full per-row form
   * (`record`); both — the two in one statement (`recordMixed`).
   */
  async recordOutcomes(outcomes: readonly Outcome[], token: ClaimToken): Promise<number> {
    if (outcomes.length === 0) return 0;
    // One pass: the successes' ids (as one array literal, see bigintArrayLiteral) and their
    // latest completion time (lastCompletion's), the other outcomes as they are.
    const okIds: string[] = [];
    const rest: Outcome[] = [];
    let okAtMs = Number.NEGATIVE_INFINITY;
    let okAt: Date | null = null;
    for (const o of outcomes) {
      if (o.status !== 'succeeded') {
        rest.push(o);
        continue;
      }
      okIds.push(o.id);
      const at = o.completedAt;
      if (at && at.getTime() > okAtMs) {
        okAtMs = at.getTime();
        okAt = at;
      }
    }
    if (rest.length === 0) {
      const { rowCount } = await this.#pooled(
        this.#recordSucceededName,
        this.#sql.recordSucceeded,
        [...this.tokenBind(token), bigintArrayLiteral(okIds), okAt],
      );
      return rowCount ?? 0;
    }
    const restBind = [...this.d.bindRows(rest, OUTCOME_COLUMNS), ...this.tokenBind(token)];
    if (okIds.length === 0) {
      const { rowCount } = await this.#pooled(this.#recordName, this.#sql.record, restBind);
      return rowCount ?? 0;
    }
    const { rows } = await this.#pooled(this.#recordMixedName, this.#sql.recordMixed, [
      ...restBind,
      bigintArrayLiteral(okIds),
      okAt,
    ]);
    return Number((rows[0] as { n: unknown }).n);
  }

  /**
   * The lean one-round-trip transaction of handler-transaction.ts where it can keep every
   * promise of Sequelize's (no CLS namespace, no instance isolation level), else
   * Sequelize's own.
   */
  override handleAndAcknowledge(
    work: (transaction: Transaction) => Promise<void>,
    ack: AcknowledgeRequest,
  ): Promise<'acknowledged' | 'lost'> {
    if (!canRunLean(this.sequelize)) return super.handleAndAcknowledge(work, ack);
    const t = this.t;
    const id = ack.id;
    if (!/^[0-9]+$/.test(id)) throw new Error(`outboxkit: a delivery id must be digits (${id})`);
    const lean: LeanAcknowledgement = {
      at: ack.at,
      afterCommitFailed: ack.afterCommitFailed,
      grouped: (at) => this.#acks.acknowledge(id, ack.token, at),
      prepared: (at) =>
        this.#statement(this.#ackName, this.#sql.acknowledge, [
          ...this.tokenBind(ack.token),
          id,
          at,
        ]),
      literal: (client: PgClient, at: Date) => {
        const time = (d: Date) => `${client.escapeLiteral(d.toISOString())}::timestamptz`;
        return failingWhenLost(
          acknowledgeSql(t, {
            worker: client.escapeLiteral(ack.token.workerId),
            claimedAt: time(ack.token.claimedAt),
            ids: `id = ${id}`,
            at: time(at),
          }),
        );
      },
    };
    return runLeanTransaction(this.sequelize, work, lean);
  }

  /** Prepared on the handler's connection: one acknowledgement per handler is the hot path. */
  override async acknowledge(
    id: string,
    token: ClaimToken,
    completedAt: Date,
    transaction: Transaction,
  ): Promise<boolean> {
    const { rowCount } = await this.#prepared(
      this.#ackName,
      this.#sql.acknowledge,
      [...this.tokenBind(token), id, completedAt],
      transaction,
    );
    return rowCount === 1;
  }

  /** The operations' event locks: `FOR UPDATE`, in primary-key order (event-locks.ts). */
  protected override eventLockSql(by: EventSelector): string {
    return lockEventsSql(this.t, by);
  }
}

/**
 * A list of delivery ids as PostgreSQL's array literal, `{1,2,3}`, bound as one text value
 * for a `$n::bigint[]` parameter. node-postgres would quote and escape every element of a
 * JS array (its `escapeElement`: two regex replaces and a concatenation per id, the
 * hottest of the record's client CPU); the ids are digits read back from the bigint
 * column, which need neither. A list that is not digits and commas (never the relay's)
 * goes as the JS array, quoted by node-postgres, so PostgreSQL's cast refuses it by name.
 */
export function bigintArrayLiteral(ids: readonly string[]): string | readonly string[] {
  const joined = ids.join(',');
  return DIGIT_LIST.test(joined) ? `{${joined}}` : ids;
}

const DIGIT_LIST = /^(?:[0-9]+(?:,[0-9]+)*)?$/;

/** A prepared statement's name: a hash of its text, so two texts never share a name. */
export function preparedName(kind: string, text: string): string {
  return `outboxkit_${kind}_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
}
