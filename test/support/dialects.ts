import { describe, inject } from 'vitest';
import {
  mariadbTestDatabase,
  mysqlTestDatabase,
  postgresTestSchema,
  sqliteTestDatabase,
  type TestDatabase,
} from '../../testing/databases.js';

/** One dialect a conformance suite runs against. */
export interface DialectCase {
  readonly name: 'sqlite' | 'postgres' | 'mariadb' | 'mysql';
  readonly open: () => Promise<TestDatabase>;
}

export const DIALECTS: readonly DialectCase[] = [
  { name: 'sqlite', open: sqliteTestDatabase },
  { name: 'postgres', open: postgresTestSchema },
  { name: 'mariadb', open: () => mariadbTestDatabase() },
  { name: 'mysql', open: mysqlTestDatabase },
];

/** Whether a dialect's server is up (the global setup checked once; SQLite always is). */
export function dialectAvailable(name: DialectCase['name']): boolean {
  if (name === 'postgres') return inject('pgAvailable');
  if (name === 'mariadb' || name === 'mysql') return inject('mariadbAvailable');
  return true;
}

/**
 * Declare the same suite for every dialect: SQLite, PostgreSQL, MariaDB through the mariadb
 * driver and through mysql2 (Sequelize's `mysql` dialect). A server's suites are skipped (and
 * the global setup says so loudly) only when the server is down and skipping is allowed.
 */
export function describeEachDialect(title: string, body: (dialect: DialectCase) => void): void {
  for (const dialect of DIALECTS) {
    const skip = !dialectAvailable(dialect.name);
    describe.skipIf(skip)(`${title} [${dialect.name}]`, () => body(dialect));
  }
}
