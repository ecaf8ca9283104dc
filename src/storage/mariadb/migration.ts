/**
 * MariaDB's migrations. MariaDB has no partial indexes and no transactional DDL, so it does
 * not replay PostgreSQL's history of index changes: version 1 creates the schema as
 * PostgreSQL has it after migration 4 — the same tables, columns and index names — and
 * versions 2 to 4 are recorded with nothing to do. Where PostgreSQL reads a partial index,
 * MariaDB's leads with the delivery row's phase, a stored generated column (sql/phase.ts):
 * the owed rows are one contiguous range of `deliveries_queue`, so the claim reads those
 * only, and a claim, a renewal or a hand-back changes no indexed column. The events' two
 * window indexes are one, led by `retention_seconds`; the two deletion policies' one, led by
 * `delete_when`. Long keys are indexed by their first 191 characters (InnoDB's 3,072-byte
 * key limit; the row is checked after the index finds it).
 *
 * Every table is InnoDB in utf8mb4 with a binary collation: receiver keys, topics and
 * idempotency keys compare exactly, as they do on PostgreSQL (the server's default
 * collation would make `Key` and `key` one idempotency key).
 *
 * Migrations hold `GET_LOCK()` (a session lock on the migrator's connection), since
 * MariaDB commits each DDL statement on its own: two processes migrating at once run one
 * after the other, and every statement is `IF NOT EXISTS`, so a second run changes nothing.
 */
import { createHash } from 'node:crypto';
import type { Sequelize, Transaction } from 'sequelize';
import type { SqlDialect, SqlRunner } from '../sql/dialect.js';
import type { MigrationProfile } from '../sql/migrate.js';
import { PHASE_OF_STATUS } from '../sql/phase.js';
import { type Migration, renderAddColumn } from '../sql/schema.js';
import { quoteIdent, type TableNames } from '../tables.js';
import { KEY_LOCK_SLOTS, keyLocksTable } from './key-locks.js';
import { backticks } from './runner.js';

/** The current time in SQL, as the tables hold it: epoch milliseconds. */
export const MARIADB_NOW_SQL = 'CAST(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000 AS SIGNED)';

const TABLE_OPTIONS = 'ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin';

/** How long a migrator waits for another one's lock, in seconds. */
const LOCK_WAIT_SECONDS = 120;

const index = (t: TableNames, name: string, columns: string, unique = false) =>
  `${unique ? 'UNIQUE ' : ''}KEY ${quoteIdent(`${t.prefix}${name}`)} (${columns})`;

/** The whole schema: what version 1 creates on MariaDB (see the module header). */
export function mariadbSchema(t: TableNames, d: SqlDialect): string[] {
  const json = d.ddl.columnType('json');
  return [
    `CREATE TABLE IF NOT EXISTS ${t.events} (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  uuid VARCHAR(36) NOT NULL,
  name VARCHAR(255) NOT NULL,
  version INT NOT NULL DEFAULT 1,
  payload ${json} NOT NULL,
  headers ${json} NOT NULL DEFAULT ('{}'),
  ordering_key VARCHAR(255),
  idempotency_key VARCHAR(255),
  occurred_at BIGINT NOT NULL,
  recorded_at BIGINT NOT NULL,
  actor TEXT,
  correlation_id VARCHAR(255),
  caused_by BIGINT,
  retention_seconds INT,
  delete_when VARCHAR(16),
  suppressed_reason TEXT,
  ${index(t, 'events_uuid', 'uuid', true)},
  ${index(t, 'events_idempotency', 'idempotency_key', true)},
  ${index(t, 'events_recorded', 'retention_seconds, recorded_at, id')},
  ${index(t, 'events_delete_when', 'delete_when, id')}
) ${TABLE_OPTIONS}`,
    `CREATE TABLE IF NOT EXISTS ${t.deliveries} (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  event_id BIGINT NOT NULL,
  receiver_key VARCHAR(255) NOT NULL,
  target VARCHAR(255) NOT NULL DEFAULT '',
  status VARCHAR(16) NOT NULL DEFAULT 'pending',
  attempts INT NOT NULL DEFAULT 0,
  max_attempts INT NOT NULL,
  available_at BIGINT NOT NULL,
  due_at BIGINT,
  claimed_by VARCHAR(255),
  claimed_at BIGINT,
  lease_until BIGINT,
  last_error TEXT,
  completed_at BIGINT,
  succeeded_at BIGINT,
  ordering_key VARCHAR(255),
  phase VARCHAR(8) GENERATED ALWAYS AS (${PHASE_OF_STATUS}) STORED,
  ${index(t, 'deliveries_queue', 'phase, event_id, id')},
  ${index(t, 'deliveries_settled', 'event_id')},
  ${index(t, 'deliveries_ordering', 'receiver_key(191), target(191), ordering_key(191), phase, event_id')},
  ${index(t, 'deliveries_dead_letters', 'phase, completed_at, id')},
  ${index(t, 'deliveries_due', 'phase, due_at, event_id')},
  ${index(t, 'deliveries_succeeded', 'receiver_key(191), succeeded_at')}
) ${TABLE_OPTIONS}`,
    `CREATE TABLE IF NOT EXISTS ${t.lastSuccess} (
  receiver_key VARCHAR(255) NOT NULL PRIMARY KEY,
  succeeded_at BIGINT NOT NULL
) ${TABLE_OPTIONS}`,
    `CREATE TABLE IF NOT EXISTS ${keyLocksTable(t)} (
  slot INT NOT NULL PRIMARY KEY
) ${TABLE_OPTIONS}`,
    `INSERT IGNORE INTO ${keyLocksTable(t)} (slot)
  SELECT s.n FROM JSON_TABLE('[${Array.from({ length: KEY_LOCK_SLOTS }, (_, i) => i).join(',')}]', '$[*]' COLUMNS (n INT PATH '$')) AS s`,
  ];
}

/**
 * The statements of one migration on MariaDB: the whole schema at version 1 (PostgreSQL's
 * after migration 4); after it, only the columns a later migration adds (migration 6's
 * `events.tenant`), each `ADD COLUMN IF NOT EXISTS`. PostgreSQL's index changes (2-4) and
 * SQLite's table rebuild (5) have nothing to do here.
 */
export function mariadbMigrationStatements(
  d: SqlDialect,
): (m: Migration, t: TableNames) => readonly string[] {
  return (m, t) =>
    m.version === 1
      ? mariadbSchema(t, d)
      : (m.addColumns ?? []).map((a) => renderAddColumn(a.table, a.column, t, d.ddl));
}

/** MariaDB's migrations: the schema of its own above, no single-writer lock table. */
export function mariadbMigrationProfile(d: SqlDialect): (t: TableNames) => MigrationProfile {
  return () => ({
    schema: { ddl: d.ddl, singleWriterLock: false },
    prelude: [],
    nowSql: MARIADB_NOW_SQL,
    statementsOf: mariadbMigrationStatements(d),
    scriptSpelling: backticks,
    recordVersionSql: (t, version) =>
      `INSERT IGNORE INTO ${t.migrations} (version, applied_at) VALUES (${version}, ${MARIADB_NOW_SQL})`,
  });
}

/**
 * How a MariaDB migrator holds its tables exclusively: `work` runs in a transaction whose
 * connection first takes the named lock of `lockKey` (`GET_LOCK`, hashed to its 64
 * characters), released when the work ends, however it ends. The outbox's and the inbox's
 * migrations both take it, each under a key naming its tables.
 */
export function mariadbExclusively(
  sequelize: Sequelize,
  runner: SqlRunner,
  lockKey: string,
): (work: (transaction: Transaction) => Promise<void>) => Promise<void> {
  const name = `outboxkit:${createHash('sha1').update(lockKey).digest('hex')}`;
  return (work) =>
    sequelize.transaction(async (transaction) => {
      const [got] = await runner.select<{ ok: unknown }>(
        `SELECT GET_LOCK($1, ${LOCK_WAIT_SECONDS}) AS ok`,
        [name],
        transaction,
      );
      if (Number(got?.ok) !== 1)
        throw new Error(
          `outboxkit: another migration of ${lockKey} held its lock for ${LOCK_WAIT_SECONDS} s`,
        );
      try {
        await work(transaction);
      } finally {
        await runner.select('SELECT RELEASE_LOCK($1) AS released', [name], transaction);
      }
    });
}
