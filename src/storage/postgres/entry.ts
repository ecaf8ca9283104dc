/** PostgreSQL's entry in the dialect registry (`storage/dialects.ts`). */
import type { DialectEntry } from '../dialect-entry.js';
import { POSTGRES_DATABASE } from './capabilities.js';
import { postgresDialect } from './dialect.js';
import { POSTGRES_NOW_SQL, postgresExclusively, postgresMigrationProfile } from './migration.js';
import { postgresRunner } from './runner.js';
import { PostgresStore } from './store.js';

export const postgresEntry: DialectEntry<'postgres'> = Object.freeze<DialectEntry<'postgres'>>({
  name: 'postgres',
  title: 'PostgreSQL',
  capabilities: POSTGRES_DATABASE,
  sql: postgresDialect,
  runner: postgresRunner,
  configureConnections: () => {},
  createStore: (sequelize, tables, options = {}) =>
    new PostgresStore(
      sequelize,
      tables,
      options.notifyChannel,
      options.preparedStatements ?? true,
      options.eventColumns,
    ),
  migration: Object.freeze({
    beforeMigrate: [],
    nowSql: POSTGRES_NOW_SQL,
    profile: postgresMigrationProfile,
    exclusively: postgresExclusively,
  }),
  connection: Object.freeze({
    urlPrefixes: ['postgres://', 'postgresql://'],
    file: false,
    defaultPort: 5432,
    currentSchemaSql: 'SELECT current_schema() AS schema',
    dialectOptions: (connectTimeoutMs: number | undefined) => ({
      connectionTimeoutMillis: connectTimeoutMs,
    }),
  }),
  // undefined_table, on the driver's error (Sequelize's `parent`/`original`) or on itself.
  missingTable: (error) => errorCodes(error).includes('42P01'),
});

/** The SQLSTATE codes on an error and on the driver errors Sequelize wraps in it. */
function errorCodes(error: unknown): unknown[] {
  if (typeof error !== 'object' || error === null) return [];
  const e = error as { code?: unknown; parent?: { code?: unknown }; original?: { code?: unknown } };
  return [e.code, e.parent?.code, e.original?.code];
}
