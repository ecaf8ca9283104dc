import { type Sequelize, Transaction } from 'sequelize';
import type { MigrationProfile } from '../sql/migrate.js';
import { sqliteDialect } from './dialect.js';

/** The current time in SQL, as SQLite's timestamps hold it: epoch milliseconds. */
export const SQLITE_NOW_SQL = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

/**
 * Run before a migration, outside any transaction (which refuses it): WAL, so readers never
 * wait for the relay's writes. The outbox's and the inbox's migrations both run it.
 */
export const SQLITE_BEFORE_MIGRATE: readonly string[] = ['PRAGMA journal_mode=WAL'];

/**
 * SQLite's migrations: its DDL spelling and the single-relay lock table; timestamps are
 * epoch milliseconds, so "now" is computed from julianday.
 */
export function sqliteMigrationProfile(): MigrationProfile {
  return {
    schema: { ddl: sqliteDialect.ddl, singleWriterLock: true },
    prelude: [],
    nowSql: SQLITE_NOW_SQL,
  };
}

/**
 * How a SQLite migrator holds its tables exclusively: `work` runs in an IMMEDIATE
 * transaction, which holds SQLite's write lock from its start, so two processes migrating
 * at once run one after the other. The outbox's and the inbox's migrations both use it.
 */
export function sqliteExclusively(
  sequelize: Sequelize,
): (work: (transaction: Transaction) => Promise<void>) => Promise<void> {
  return (work) => sequelize.transaction({ type: Transaction.TYPES.IMMEDIATE }, work);
}
