import { QueryTypes, type Sequelize } from 'sequelize';
import { describe, expect, inject } from 'vitest';
import { dialectOf } from '../../src/storage/dialects.js';
import { backticks } from '../../src/storage/mariadb/runner.js';
import type { SqlRunner } from '../../src/storage/sql/dialect.js';
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
  { name: 'mariadb', open: async () => portableSql(await mariadbTestDatabase()) },
  { name: 'mysql', open: async () => portableSql(await mysqlTestDatabase()) },
];

/**
 * Whether the suites of the file being collected run the `mysql` case (the mysql2 driver
 * against MariaDB) beside `mariadb`: the store, fire, capture, inbox and packaging suites —
 * where the code paths written for MySQL's missing RETURNING are — always; every other suite
 * with OUTBOX_TEST_MYSQL=all. The relay, ops and CLI suites read the store through the same
 * code on both drivers, and a third MariaDB run of each would cost the whole suite ~2 min.
 */
function mysqlRunsHere(): boolean {
  if (process.env.OUTBOX_TEST_MYSQL === 'all') return true;
  const path = expect.getState().testPath ?? '';
  return /[\\/]test[\\/](storage|fire|capture|inbox|packaging|testing)[\\/]/.test(path);
}

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
    if (dialect.name === 'mysql' && !mysqlRunsHere()) continue;
    const skip = !dialectAvailable(dialect.name);
    describe.skipIf(skip)(`${title} [${dialect.name}]`, () => body(dialect));
  }
}

/**
 * A test's own SQL, run the way the store runs its statements: through the dialect's
 * runner, so one text serves every dialect — double-quoted identifiers (backticks on
 * MariaDB), `$n` parameters, and the query type MariaDB's driver needs.
 */
export function sqlOf(sequelize: Sequelize): SqlRunner {
  return dialectOf(sequelize).runner(sequelize);
}

/** Whether a dialect is MariaDB's, through either driver. */
export const isMariadb = (name: string): boolean => name === 'mariadb' || name === 'mysql';

const PORTABLE = Symbol('portable sql');

/**
 * The suites' own SQL, written once for PostgreSQL and SQLite (double-quoted identifiers, a
 * bare `sequelize.query(sql)`), read on MariaDB too: each of the test database's Sequelize
 * instances gets a `query` that turns double-quoted identifiers into backticks (as the
 * store's runner does, mariadb/runner.ts) and runs a SELECT without a query type as
 * `QueryTypes.SELECT`, answering `[rows, rows]` like a raw query (Sequelize's raw
 * handling of a `mariadb` result throws). Test plumbing only, never the package's:
 * `outboxkit/testing`'s `mariadbTestDatabase` hands out plain instances. The outbox's own
 * statements are double-quote-free by then (the runner translated them) and pass unchanged.
 */
function portableSql(db: TestDatabase): TestDatabase {
  const patch = (sequelize: Sequelize): Sequelize => {
    const s = sequelize as Sequelize & { [PORTABLE]?: true };
    if (s[PORTABLE]) return sequelize;
    const query = sequelize.query.bind(sequelize) as (
      sql: unknown,
      options?: unknown,
    ) => Promise<unknown>;
    (s as unknown as { query: unknown }).query = (
      sql: unknown,
      given?: { type?: string; bind?: unknown; replacements?: unknown },
    ) => {
      if (typeof sql !== 'string') return query(sql, given);
      const text = backticks(sql);
      // The outbox's timestamps are epoch milliseconds here (BIGINT): a Date bound by a
      // suite's own statement is written as one.
      const ms = (v: unknown) =>
        Array.isArray(v) ? v.map((x) => (x instanceof Date ? x.getTime() : x)) : v;
      const options = given && {
        ...given,
        bind: ms(given.bind),
        replacements: ms(given.replacements),
      };
      if (
        (options?.type === undefined || options.type === QueryTypes.RAW) &&
        /^\s*(SELECT|SHOW|WITH)\b/i.test(text)
      )
        return query(text, { ...options, type: QueryTypes.SELECT }).then((rows) => [rows, rows]);
      return query(text, options);
    };
    s[PORTABLE] = true;
    return sequelize;
  };
  patch(db.sequelize);
  const connectAgain = db.connectAgain.bind(db);
  return { ...db, connectAgain: () => patch(connectAgain()) } as TestDatabase;
}

/** {@link portableSql} for a database the CLI suites open (test/cli/support/cli.ts). */
export function portableSqlOf<T extends { readonly outboxOptions: { sequelize: Sequelize } }>(
  db: T,
): T {
  portableSql({
    sequelize: db.outboxOptions.sequelize,
    connectAgain: () => db.outboxOptions.sequelize,
  } as never);
  return db;
}
