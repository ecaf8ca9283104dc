import type { Sequelize, Transaction } from 'sequelize';
import type { SqlRunner } from '../sql/dialect.js';
import type { MigrationProfile } from '../sql/migrate.js';
import { quoteIdent, type TableNames } from '../tables.js';
import { postgresDialect } from './dialect.js';

/** The current time in SQL, as PostgreSQL's timestamps hold it. */
export const POSTGRES_NOW_SQL = 'now()';

/**
 * PostgreSQL's migrations: its DDL spelling, no single-writer lock table, and the schema
 * created first when the tables live in one of their own.
 */
export function postgresMigrationProfile(t: TableNames): MigrationProfile {
  return {
    schema: { ddl: postgresDialect.ddl, singleWriterLock: false },
    prelude: t.schema ? [`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(t.schema)}`] : [],
    nowSql: POSTGRES_NOW_SQL,
  };
}

/**
 * How a PostgreSQL migrator holds its tables exclusively: `work` runs in a transaction that
 * first takes the advisory lock of `lockKey` (for the transaction), so two processes
 * migrating the same tables at once run one after the other. The outbox's and the inbox's
 * migrations both take it, each under a key naming its tables.
 */
export function postgresExclusively(
  sequelize: Sequelize,
  runner: SqlRunner,
  lockKey: string,
): (work: (transaction: Transaction) => Promise<void>) => Promise<void> {
  return (work) =>
    sequelize.transaction(async (transaction) => {
      await runner.run('SELECT pg_advisory_xact_lock(hashtext($1))', [lockKey], transaction);
      await work(transaction);
    });
}
