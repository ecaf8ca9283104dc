/**
 * Whether the consumer inbox's table is there and up to date (`outbox migrate --inbox
 * --check`), read from the inbox's own versions table the way `schemaStatus` reads the
 * outbox's.
 */
import { QueryTypes, type Sequelize } from 'sequelize';
import { INBOX_MIGRATION_VERSIONS } from '../src/inbox/schema.js';
import type { InboxTables } from '../src/inbox/tables.js';
import { isMissingTableError, type SchemaStatus } from './schema-status.js';

/** Read the inbox's applied migration versions. Other errors (a connection lost) are thrown. */
export async function inboxStatus(
  sequelize: Sequelize,
  tables: InboxTables,
): Promise<SchemaStatus> {
  let rows: { version: number | string }[];
  try {
    rows = await sequelize.query(`SELECT version FROM ${tables.migrations} ORDER BY version`, {
      type: QueryTypes.SELECT,
    });
  } catch (error) {
    if (isMissingTableError(error)) return { state: 'missing' };
    throw error;
  }
  const applied = rows.map((r) => Number(r.version));
  const pending = INBOX_MIGRATION_VERSIONS.filter((v) => !applied.includes(v));
  return pending.length > 0 ? { state: 'behind', applied, pending } : { state: 'current', applied };
}
