/** SQLite's entry in the dialect registry (`storage/dialects.ts`). */
import type { DialectEntry } from '../dialect-entry.js';
import { SQLITE_DATABASE } from './capabilities.js';
import { configureConnections } from './connections.js';
import { sqliteDialect } from './dialect.js';
import {
  SQLITE_BEFORE_MIGRATE,
  SQLITE_NOW_SQL,
  sqliteExclusively,
  sqliteMigrationProfile,
} from './migration.js';
import { sqliteRunner } from './runner.js';
import { SqliteStore } from './store.js';

export const sqliteEntry: DialectEntry<'sqlite'> = Object.freeze<DialectEntry<'sqlite'>>({
  name: 'sqlite',
  title: 'SQLite',
  capabilities: SQLITE_DATABASE,
  sql: sqliteDialect,
  runner: sqliteRunner,
  configureConnections,
  createStore: (sequelize, tables, options = {}) =>
    new SqliteStore(sequelize, tables, options.eventColumns),
  migration: Object.freeze({
    beforeMigrate: SQLITE_BEFORE_MIGRATE,
    nowSql: SQLITE_NOW_SQL,
    profile: sqliteMigrationProfile,
    exclusively: sqliteExclusively,
  }),
  connection: Object.freeze({
    urlPrefixes: ['sqlite:'],
    file: true,
    defaultPort: undefined,
    currentSchemaSql: undefined,
    dialectOptions: () => ({}),
  }),
  // SQLite has no code for it (SQLITE_ERROR is every error): its message is the only sign.
  missingTable: (error) =>
    error instanceof Error &&
    /\bno such table\b/.test(
      `${error.message} ${(error as { parent?: { message?: unknown } }).parent?.message ?? ''}`,
    ),
});
