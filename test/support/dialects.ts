import { describe, inject } from 'vitest';
import {
  postgresTestSchema,
  sqliteTestDatabase,
  type TestDatabase,
} from '../../testing/databases.js';

/** One dialect a conformance suite runs against. */
export interface DialectCase {
  readonly name: 'sqlite' | 'postgres';
  readonly open: () => Promise<TestDatabase>;
}

export const DIALECTS: readonly DialectCase[] = [
  { name: 'sqlite', open: sqliteTestDatabase },
  { name: 'postgres', open: postgresTestSchema },
];

/**
 * Declare the same suite for SQLite and PostgreSQL. The PostgreSQL one is skipped (and the
 * global setup says so loudly) only when the server is down and skipping is allowed.
 */
export function describeEachDialect(title: string, body: (dialect: DialectCase) => void): void {
  for (const dialect of DIALECTS) {
    const skip = dialect.name === 'postgres' && !inject('pgAvailable');
    describe.skipIf(skip)(`${title} [${dialect.name}]`, () => body(dialect));
  }
}
