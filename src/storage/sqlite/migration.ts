import type { MigrationProfile } from '../sql/migrate.js';
import { sqliteDialect } from './dialect.js';

/**
 * SQLite's migrations: its DDL spelling and the single-relay lock table; timestamps are
 * epoch milliseconds, so "now" is computed from julianday.
 */
export function sqliteMigrationProfile(): MigrationProfile {
  return {
    schema: { ddl: sqliteDialect.ddl, singleWriterLock: true },
    prelude: [],
    nowSql: "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
  };
}
