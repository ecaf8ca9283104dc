import type { MigrationProfile } from '../sql/migrate.js';
import { quoteIdent, type TableNames } from '../tables.js';
import { postgresDialect } from './dialect.js';

/**
 * PostgreSQL's migrations: its DDL spelling, no single-writer lock table, and the schema
 * created first when the tables live in one of their own.
 */
export function postgresMigrationProfile(t: TableNames): MigrationProfile {
  return {
    schema: { ddl: postgresDialect.ddl, singleWriterLock: false },
    prelude: t.schema ? [`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(t.schema)}`] : [],
    nowSql: 'now()',
  };
}
