import { QueryTypes, type Sequelize, Transaction } from 'sequelize';
import type { DeliveryStatus } from '../declare/types.js';
import { countsFrom, EVENT_COLUMNS, type Row, toDeliveryRow, toStoredEvent } from './rows.js';
import type {
  ClaimedDelivery,
  ClaimOptions,
  ClaimToken,
  DeliveryRow,
  EventRowInput,
  OutboxStore,
  Outcome,
  StoredEvent,
  WrittenEvent,
} from './store.js';
import { HOLDS_BACK, OWED, quoteIdent, type TableNames } from './tables.js';

const BUSY_TIMEOUT_MS = 10_000;
const CONFIGURED = Symbol.for('outboxkit.sqlite.configured');
/** SQLite allows 32766 bound values per statement; 11 per event row keeps a run well below. */
const EVENTS_PER_STATEMENT = 2000;
const DELIVERIES_PER_STATEMENT = 5000;

const ms = (d: Date | null | undefined): number | null => (d ? d.getTime() : null);

/**
 * The SQLite store, the embedded default: the demo, a first run and most unit tests use it.
 *
 * Timestamps are stored as epoch milliseconds (INTEGER), which compare and index exactly.
 * SQLite has one writer at a time and no skipped locks, so two relays would claim the
 * same rows: the relay takes a lease-based single-relay lock instead (see runRelay's
 * `allowUnsafeConcurrency`). Every connection Sequelize opens gets a busy timeout, so a
 * writer waits for the lock instead of failing with SQLITE_BUSY.
 *
 * Statements that return rows start with a comment: Sequelize's SQLite dialect runs
 * anything starting with `insert into` through `run()`, which drops the rows of
 * `RETURNING` (and it trims leading white space).
 */
export class SqliteStore implements OutboxStore {
  readonly dialect = 'sqlite' as const;
  readonly supportsSkipLocked = false;

  constructor(
    private readonly sequelize: Sequelize,
    private readonly t: TableNames,
  ) {
    configureConnections(sequelize);
  }

  #select<T = Row>(sql: string, bind: unknown[], transaction?: Transaction | null): Promise<T[]> {
    return this.sequelize.query(`/* outboxkit */ ${sql}`, {
      bind: bind.length ? bind : undefined,
      type: QueryTypes.SELECT,
      transaction: transaction ?? null,
      raw: true,
    }) as Promise<T[]>;
  }

  async #exec(sql: string, bind: unknown[], transaction?: Transaction | null): Promise<number> {
    const rows = await this.#select<{ n: number }>(`${sql} RETURNING 1 AS n`, bind, transaction);
    return rows.length;
  }

  async migrate(): Promise<void> {
    await this.sequelize.query('PRAGMA journal_mode=WAL', { raw: true });
    await this.sequelize.transaction({ type: Transaction.TYPES.IMMEDIATE }, async (transaction) => {
      await this.sequelize.query(
        `CREATE TABLE IF NOT EXISTS ${this.t.migrations} (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`,
        { transaction, raw: true },
      );
      const done = new Set(
        (
          await this.#select<{ version: number }>(
            `SELECT version FROM ${this.t.migrations}`,
            [],
            transaction,
          )
        ).map((r) => r.version),
      );
      for (const [version, ddl] of sqliteMigrations(this.t)) {
        if (done.has(version)) continue;
        for (const statement of ddl)
          await this.sequelize.query(statement, { transaction, raw: true });
        await this.sequelize.query(
          `INSERT INTO ${this.t.migrations} (version, applied_at) VALUES ($1, $2)`,
          {
            bind: [version, Date.now()],
            transaction,
            raw: true,
          },
        );
      }
    });
  }

  async insertEvents(
    events: readonly EventRowInput[],
    transaction: Transaction,
  ): Promise<WrittenEvent[]> {
    const written = new Map<string, string>();
    for (let i = 0; i < events.length; i += EVENTS_PER_STATEMENT) {
      const run = events.slice(i, i + EVENTS_PER_STATEMENT);
      const bind: unknown[] = [];
      const values = run.map((e) => {
        const at = bind.length;
        bind.push(
          e.uuid,
          e.name,
          e.version,
          e.payload,
          e.headers,
          e.orderingKey,
          e.idempotencyKey,
          ms(e.occurredAt),
          ms(e.recordedAt),
          e.retentionSeconds,
          e.deleteWhen,
        );
        return `(${Array.from({ length: 11 }, (_, k) => `$${at + k + 1}`).join(', ')})`;
      });
      const rows = await this.#select<{ id: number; uuid: string }>(
        `INSERT INTO ${this.t.events} (uuid, name, version, payload, headers, ordering_key, idempotency_key,
                                       occurred_at, recorded_at, retention_seconds, delete_when)
         VALUES ${values.join(', ')}
         ON CONFLICT (idempotency_key) DO NOTHING
         RETURNING id, uuid`,
        bind,
        transaction,
      );
      for (const row of rows) written.set(row.uuid, String(row.id));
    }

    const deliveries = events.flatMap((e) => {
      const sequence = written.get(e.uuid);
      return sequence === undefined
        ? []
        : e.deliveries.map((d) => [sequence, e.orderingKey, d] as const);
    });
    for (let i = 0; i < deliveries.length; i += DELIVERIES_PER_STATEMENT) {
      const run = deliveries.slice(i, i + DELIVERIES_PER_STATEMENT);
      const bind: unknown[] = [];
      const values = run.map(([sequence, orderingKey, d]) => {
        const at = bind.length;
        bind.push(
          Number(sequence),
          d.receiverKey,
          d.target,
          d.maxAttempts,
          ms(d.availableAt),
          orderingKey,
        );
        return `($${at + 1}, $${at + 2}, $${at + 3}, 'pending', 0, $${at + 4}, $${at + 5}, $${at + 6})`;
      });
      await this.sequelize.query(
        `INSERT INTO ${this.t.deliveries} (event_id, receiver_key, target, status, attempts, max_attempts, available_at, ordering_key)
         VALUES ${values.join(', ')}`,
        { bind, transaction, raw: true },
      );
    }

    const missing = events.filter((e) => !written.has(e.uuid)).map((e) => e.idempotencyKey);
    const existing = new Map<string, { id: number; uuid: string }>();
    if (missing.length > 0) {
      const found = await this.#select<{ id: number; uuid: string; idempotency_key: string }>(
        `SELECT id, uuid, idempotency_key FROM ${this.t.events} WHERE idempotency_key IN (SELECT value FROM json_each($1))`,
        [JSON.stringify(missing)],
        transaction,
      );
      for (const row of found) existing.set(row.idempotency_key, row);
    }
    return events.map((e) => {
      const sequence = written.get(e.uuid);
      if (sequence !== undefined) return { sequence, uuid: e.uuid, inserted: true };
      const stored = existing.get(e.idempotencyKey ?? '');
      if (!stored)
        throw new Error(`event ${e.uuid} was neither written nor found by its idempotency key`);
      return { sequence: String(stored.id), uuid: stored.uuid, inserted: false };
    });
  }

  async readEvents(
    filter: { name?: string; sequences?: readonly string[] },
    transaction?: Transaction,
  ): Promise<StoredEvent[]> {
    const rows = await this.#select(
      `SELECT ${EVENT_COLUMNS('e')} FROM ${this.t.events} e
       WHERE ($1 IS NULL OR e.name = $1) AND ($2 IS NULL OR e.id IN (SELECT value FROM json_each($2)))
       ORDER BY e.id`,
      [filter.name ?? null, filter.sequences ? JSON.stringify(filter.sequences.map(Number)) : null],
      transaction,
    );
    return rows.map(toStoredEvent);
  }

  /**
   * Claim up to $6 owed deliveries; the same conditions as the PostgreSQL claim (see
   * there), without SKIP LOCKED: SQLite has one writer, so the UPDATE is atomic on its own.
   */
  async claim(o: ClaimOptions): Promise<ClaimedDelivery[]> {
    const t = this.t;
    const claimed = await this.#select(
      `UPDATE ${t.deliveries} SET status = 'claimed', claimed_by = $1, claimed_at = $2, lease_until = $3
       WHERE id IN (
         SELECT c.id FROM ${t.deliveries} c
         WHERE c.status IN (${OWED})
           AND (
             (c.status = 'claimed' AND c.lease_until <= $4)
             OR (c.status <> 'claimed' AND c.available_at <= $4)
             OR ($5 AND c.status = 'failed' AND (c.due_at IS NULL OR c.due_at <= $4))
           )
           AND c.id NOT IN (SELECT value FROM json_each($7))
           AND ($8 IS NULL OR c.id IN (SELECT value FROM json_each($8)))
           AND (c.ordering_key IS NULL OR NOT EXISTS (
             SELECT 1 FROM ${t.deliveries} p
             WHERE p.receiver_key = c.receiver_key AND p.target = c.target
               AND p.ordering_key = c.ordering_key AND p.event_id < c.event_id
               AND p.status IN (${HOLDS_BACK})
           ))
         ORDER BY c.event_id, c.id
         LIMIT $6
       )
       RETURNING id, event_id, receiver_key, target, attempts, max_attempts, due_at`,
      [
        o.token.workerId,
        ms(o.token.claimedAt),
        ms(o.leaseUntil),
        ms(o.now),
        o.ignoreBackoff ? 1 : 0,
        o.limit,
        JSON.stringify((o.excludeIds ?? []).map(Number)),
        o.onlyIds ? JSON.stringify(o.onlyIds.map(Number)) : null,
      ],
    );
    if (claimed.length === 0) return [];
    const events = new Map(
      (
        await this.#select(
          `SELECT ${EVENT_COLUMNS('e')} FROM ${t.events} e WHERE e.id IN (SELECT value FROM json_each($1))`,
          [JSON.stringify([...new Set(claimed.map((r) => r.event_id))])],
        )
      ).map((r) => [String(r.event_sequence), toStoredEvent(r)]),
    );
    claimed.sort((a, b) => Number(a.event_id) - Number(b.event_id) || Number(a.id) - Number(b.id));
    return claimed.map((r) => ({
      id: String(r.id),
      receiverKey: r.receiver_key as string,
      target: r.target as string,
      attempts: Number(r.attempts),
      maxAttempts: Number(r.max_attempts),
      dueAt: r.due_at === null ? null : new Date(Number(r.due_at)),
      event: events.get(String(r.event_id))!,
    }));
  }

  renewLeases(ids: readonly string[], token: ClaimToken, leaseUntil: Date): Promise<number> {
    return this.#exec(
      `UPDATE ${this.t.deliveries} SET lease_until = $3
       WHERE id IN (SELECT value FROM json_each($4)) AND status = 'claimed' AND claimed_by = $1 AND claimed_at = $2`,
      [token.workerId, ms(token.claimedAt), ms(leaseUntil), JSON.stringify(ids.map(Number))],
    );
  }

  release(ids: readonly string[], token: ClaimToken, now: Date): Promise<number> {
    return this.#exec(
      `UPDATE ${this.t.deliveries}
       SET status = CASE WHEN attempts > 0 THEN 'failed' ELSE 'pending' END,
           available_at = MIN(available_at, $3), lease_until = NULL
       WHERE id IN (SELECT value FROM json_each($4)) AND status = 'claimed' AND claimed_by = $1 AND claimed_at = $2`,
      [token.workerId, ms(token.claimedAt), ms(now), JSON.stringify(ids.map(Number))],
    );
  }

  /** Record many outcomes in one statement, a compare-and-set on the claim (see PostgreSQL). */
  recordOutcomes(outcomes: readonly Outcome[], token: ClaimToken): Promise<number> {
    if (outcomes.length === 0) return Promise.resolve(0);
    const data = outcomes.map((o) => ({
      id: Number(o.id),
      status: o.status,
      attempts: o.attempts,
      available_at: ms(o.availableAt),
      due_at: ms(o.dueAt),
      last_error: o.lastError,
      completed_at: ms(o.completedAt),
    }));
    return this.#exec(
      `UPDATE ${this.t.deliveries} AS d
       SET status = v.status,
           attempts = v.attempts,
           available_at = COALESCE(v.available_at, d.available_at),
           due_at = CASE WHEN v.status = 'pending' THEN v.due_at ELSE d.due_at END,
           last_error = COALESCE(v.last_error, d.last_error),
           completed_at = v.completed_at,
           succeeded_at = CASE WHEN v.status = 'succeeded' THEN v.completed_at ELSE d.succeeded_at END,
           lease_until = NULL
       FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.status') AS status,
                    json_extract(value, '$.attempts') AS attempts, json_extract(value, '$.available_at') AS available_at,
                    json_extract(value, '$.due_at') AS due_at, json_extract(value, '$.last_error') AS last_error,
                    json_extract(value, '$.completed_at') AS completed_at
             FROM json_each($1)) AS v
       WHERE d.id = v.id AND d.status = 'claimed' AND d.claimed_by = $2 AND d.claimed_at = $3`,
      [JSON.stringify(data), token.workerId, ms(token.claimedAt)],
    );
  }

  async acknowledge(
    id: string,
    token: ClaimToken,
    completedAt: Date,
    transaction: Transaction,
  ): Promise<boolean> {
    const n = await this.#exec(
      `UPDATE ${this.t.deliveries}
       SET status = 'succeeded', attempts = attempts + 1, completed_at = $4, succeeded_at = $4, lease_until = NULL
       WHERE id = $3 AND status = 'claimed' AND claimed_by = $1 AND claimed_at = $2`,
      [token.workerId, ms(token.claimedAt), Number(id), ms(completedAt)],
      transaction,
    );
    return n === 1;
  }

  async countDeliveries(): Promise<Record<DeliveryStatus, number>> {
    return countsFrom(
      await this.#select(
        `SELECT status, count(*) AS n FROM ${this.t.deliveries} GROUP BY status`,
        [],
      ),
    );
  }

  async readDeliveries(filter: { eventSequence?: string }): Promise<DeliveryRow[]> {
    const rows = await this.#select(
      `SELECT * FROM ${this.t.deliveries} WHERE ($1 IS NULL OR event_id = $1) ORDER BY event_id, id`,
      [filter.eventSequence === undefined ? null : Number(filter.eventSequence)],
    );
    return rows.map(toDeliveryRow);
  }

  /**
   * Take the single-relay lock for `holder` until `until`, or renew it; refused while
   * another holder's lease is live. Returns whether `holder` now holds it.
   */
  async acquireRelayLock(holder: string, now: Date, until: Date): Promise<boolean> {
    const rows = await this.#select(
      `INSERT INTO ${this.t.relayLock} (id, holder, lease_until) VALUES (1, $1, $3)
       ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until
       WHERE ${this.t.relayLock}.holder = excluded.holder OR ${this.t.relayLock}.lease_until <= $2
       RETURNING holder`,
      [holder, ms(now), ms(until)],
    );
    return rows.length === 1;
  }

  async releaseRelayLock(holder: string): Promise<void> {
    await this.sequelize.query(`DELETE FROM ${this.t.relayLock} WHERE holder = $1`, {
      bind: [holder],
      raw: true,
    });
  }
}

/** The schema, as numbered migrations. Times are epoch milliseconds. */
function sqliteMigrations(t: TableNames): [number, string[]][] {
  const ix = (name: string) => quoteIdent(`${t.prefix}${name}`);
  return [
    [
      1,
      [
        `CREATE TABLE IF NOT EXISTS ${t.events} (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          uuid TEXT NOT NULL UNIQUE,
          name TEXT NOT NULL,
          version INTEGER NOT NULL DEFAULT 1,
          payload TEXT NOT NULL,
          headers TEXT NOT NULL DEFAULT '{}',
          ordering_key TEXT,
          idempotency_key TEXT UNIQUE,
          occurred_at INTEGER NOT NULL,
          recorded_at INTEGER NOT NULL,
          actor TEXT,
          correlation_id TEXT,
          caused_by INTEGER,
          retention_seconds INTEGER,
          delete_when TEXT,
          suppressed_reason TEXT
        )`,
        `CREATE INDEX IF NOT EXISTS ${ix('events_name')} ON ${t.events} (name, id)`,
        `CREATE TABLE IF NOT EXISTS ${t.deliveries} (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          event_id INTEGER NOT NULL,
          receiver_key TEXT NOT NULL,
          target TEXT NOT NULL DEFAULT '',
          status TEXT NOT NULL DEFAULT 'pending',
          attempts INTEGER NOT NULL DEFAULT 0,
          max_attempts INTEGER NOT NULL,
          available_at INTEGER NOT NULL,
          due_at INTEGER,
          claimed_by TEXT,
          claimed_at INTEGER,
          lease_until INTEGER,
          last_error TEXT,
          completed_at INTEGER,
          succeeded_at INTEGER,
          ordering_key TEXT
        )`,
        `CREATE INDEX IF NOT EXISTS ${ix('deliveries_owed')} ON ${t.deliveries} (event_id, id) WHERE status IN (${OWED})`,
        `CREATE INDEX IF NOT EXISTS ${ix('deliveries_key')} ON ${t.deliveries} (receiver_key, target, ordering_key, event_id)
           WHERE ordering_key IS NOT NULL AND status IN (${HOLDS_BACK})`,
        `CREATE INDEX IF NOT EXISTS ${ix('deliveries_event')} ON ${t.deliveries} (event_id)`,
        `CREATE TABLE IF NOT EXISTS ${t.lastSuccess} (receiver_key TEXT PRIMARY KEY, succeeded_at INTEGER NOT NULL)`,
        `CREATE TABLE IF NOT EXISTS ${t.relayLock} (id INTEGER PRIMARY KEY CHECK (id = 1), holder TEXT NOT NULL, lease_until INTEGER NOT NULL)`,
      ],
    ],
  ];
}

interface SqliteConnection {
  configure(option: 'busyTimeout', value: number): void;
  [CONFIGURED]?: boolean;
}

/**
 * Give every connection Sequelize opens a busy timeout. Sequelize's SQLite dialect opens
 * one connection per transaction and runs no hook when it does, so this wraps its
 * connection manager once per Sequelize instance.
 */
function configureConnections(sequelize: Sequelize): void {
  const manager = (sequelize as unknown as { connectionManager: Record<PropertyKey, unknown> })
    .connectionManager;
  if (manager[CONFIGURED]) return;
  const getConnection = (manager.getConnection as (o: unknown) => Promise<SqliteConnection>).bind(
    manager,
  );
  manager.getConnection = async (options: unknown) => {
    const connection = await getConnection(options);
    if (!connection[CONFIGURED]) {
      connection.configure('busyTimeout', BUSY_TIMEOUT_MS);
      connection[CONFIGURED] = true;
    }
    return connection;
  };
  manager[CONFIGURED] = true;
}
