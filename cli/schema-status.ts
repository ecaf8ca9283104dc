/**
 * Whether the outbox's tables are there and up to date, read before a command works on
 * them: a relay on an unmigrated database says "run `npx outbox migrate`" instead of
 * retrying a missing table for ever, and `outbox migrate --check` fails while a migration
 * is pending.
 */
import type { Sequelize } from 'sequelize';
import { dialectOf } from '../src/storage/dialects.js';
import { MIGRATION_VERSIONS } from '../src/storage/sql/migrate.js';
import type { TableNames } from '../src/storage/tables.js';

/** What the migrations table says. */
export type SchemaStatus =
  | { readonly state: 'missing' }
  | {
      readonly state: 'behind';
      readonly applied: readonly number[];
      readonly pending: readonly number[];
    }
  | { readonly state: 'current'; readonly applied: readonly number[] };

/**
 * How the drivers say a table does not exist, as data: PostgreSQL's SQLSTATE, and SQLite's
 * message (its code, SQLITE_ERROR, is every error).
 */
const MISSING_TABLE = {
  codes: new Set(['42P01']), // undefined_table
  messages: [/no such table/],
} as const;

/** Whether a database error (or its cause) says a table is missing. */
export function isMissingTableError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    const r = e as { code?: unknown; message?: unknown; parent?: unknown; original?: unknown };
    if (typeof r.code === 'string' && MISSING_TABLE.codes.has(r.code)) return true;
    if (
      typeof r.message === 'string' &&
      MISSING_TABLE.messages.some((m) => m.test(r.message as string))
    )
      return true;
    e = r.parent ?? r.original;
  }
  return false;
}

/** Read the applied migration versions. Other errors (a connection lost) are thrown. */
export async function schemaStatus(
  sequelize: Sequelize,
  tables: TableNames,
): Promise<SchemaStatus> {
  let rows: { version: number | string }[];
  try {
    // Through the dialect's runner, which spells the quoted table name its way.
    rows = await dialectOf(sequelize)
      .runner(sequelize)
      .select(`SELECT version FROM ${tables.migrations} ORDER BY version`, []);
  } catch (error) {
    if (isMissingTableError(error) || dialectOf(sequelize).missingTable(error))
      return { state: 'missing' };
    throw error;
  }
  const applied = rows.map((r) => Number(r.version));
  const pending = MIGRATION_VERSIONS.filter((v) => !applied.includes(v));
  return pending.length > 0 ? { state: 'behind', applied, pending } : { state: 'current', applied };
}
