/**
 * Whether the consumer inbox's table is there and up to date (`outbox migrate --inbox
 * --check`), read from the inbox's own versions table the way `schemaStatus` reads the
 * outbox's.
 */
import type { Sequelize } from 'sequelize';
import { INBOX_MIGRATION_VERSIONS } from '../src/inbox/schema.js';
import type { InboxTables } from '../src/inbox/tables.js';
import { dialectOf } from '../src/storage/dialects.js';
import { isMissingTableError, type SchemaStatus } from './schema-status.js';

/** Read the inbox's applied migration versions. Other errors (a connection lost) are thrown. */
export async function inboxStatus(
  sequelize: Sequelize,
  tables: InboxTables,
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
  const pending = INBOX_MIGRATION_VERSIONS.filter((v) => !applied.includes(v));
  return pending.length > 0 ? { state: 'behind', applied, pending } : { state: 'current', applied };
}
