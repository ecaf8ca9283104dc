import type { Sequelize } from 'sequelize';
import type { DialectEntry } from '../storage/dialect-entry.js';
import type { SqlDialect, SqlRunner } from '../storage/sql/dialect.js';
import type { InboxTables } from './tables.js';

/** What every inbox operation needs: resolved once by `inbox()`, then passed along. */
export interface InboxContext {
  readonly sequelize: Sequelize;
  /** The dialect's registry entry: its capabilities and how it migrates. */
  readonly dialect: DialectEntry;
  /** How parameters and values are written and bound on this dialect. */
  readonly sql: SqlDialect;
  /** How statements run (row counts included) on this dialect. */
  readonly runner: SqlRunner;
  readonly tables: InboxTables;
  /** The consumer whose rows this inbox reads and writes. */
  readonly consumer: string;
  /** The clock `received_at`, `processed_at` and a prune's `now` are read from. */
  readonly clock: () => Date;
}
