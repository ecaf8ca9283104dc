/**
 * MariaDB's and MySQL's entries in the dialect registry (`storage/dialects.ts`): one store
 * and one schema for both, differing in RETURNING (MariaDB has it on INSERT and DELETE,
 * MySQL on nothing) and in the JSON column's type (dialect.ts).
 */
import type { DialectEntry } from '../dialect-entry.js';
import {
  MARIADB_CAPABILITIES,
  MARIADB_DATABASE,
  MYSQL_CAPABILITIES,
  MYSQL_DATABASE,
} from './capabilities.js';
import { mariadbDialect, mysqlDialect } from './dialect.js';
import { MARIADB_NOW_SQL, mariadbExclusively, mariadbMigrationProfile } from './migration.js';
import { backticks, mariadbRunner } from './runner.js';
import { MariadbStore } from './store.js';

/** ER_NO_SUCH_TABLE, on the driver's error (Sequelize's `parent`/`original`) or on itself. */
function missingTable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as {
    errno?: unknown;
    parent?: { errno?: unknown };
    original?: { errno?: unknown };
  };
  return [e.errno, e.parent?.errno, e.original?.errno].includes(1146);
}

const connection = (urlPrefixes: readonly string[]) =>
  Object.freeze({
    urlPrefixes,
    file: false,
    defaultPort: 3306,
    currentSchemaSql: undefined,
    dialectOptions: (connectTimeoutMs: number | undefined) =>
      connectTimeoutMs === undefined ? {} : { connectTimeout: connectTimeoutMs },
  });

export const mariadbEntry: DialectEntry<'mariadb'> = Object.freeze<DialectEntry<'mariadb'>>({
  name: 'mariadb',
  title: 'MariaDB',
  capabilities: MARIADB_DATABASE,
  sql: mariadbDialect,
  runner: mariadbRunner,
  configureConnections: () => {},
  createStore: (sequelize, tables, options = {}) =>
    new MariadbStore(
      sequelize,
      tables,
      {
        name: 'mariadb',
        dialect: mariadbDialect,
        capabilities: MARIADB_CAPABILITIES,
        insertReturning: MARIADB_DATABASE.returning.insert,
      },
      options.eventColumns,
    ),
  migration: Object.freeze({
    beforeMigrate: [],
    nowSql: MARIADB_NOW_SQL,
    scriptSpelling: backticks,
    profile: mariadbMigrationProfile(mariadbDialect),
    exclusively: mariadbExclusively,
  }),
  connection: connection(['mariadb://']),
  missingTable,
});

export const mysqlEntry: DialectEntry<'mysql'> = Object.freeze<DialectEntry<'mysql'>>({
  name: 'mysql',
  title: 'MySQL',
  capabilities: MYSQL_DATABASE,
  sql: mysqlDialect,
  runner: mariadbRunner,
  configureConnections: () => {},
  createStore: (sequelize, tables, options = {}) =>
    new MariadbStore(
      sequelize,
      tables,
      {
        name: 'mysql',
        dialect: mysqlDialect,
        capabilities: MYSQL_CAPABILITIES,
        insertReturning: MYSQL_DATABASE.returning.insert,
      },
      options.eventColumns,
    ),
  migration: Object.freeze({
    beforeMigrate: [],
    nowSql: MARIADB_NOW_SQL,
    scriptSpelling: backticks,
    profile: mariadbMigrationProfile(mysqlDialect),
    exclusively: mariadbExclusively,
  }),
  connection: connection(['mysql://']),
  missingTable,
});
