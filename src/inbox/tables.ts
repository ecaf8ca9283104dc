import { ConfigurationError } from '../errors/outbox-error.js';
import { quoteIdent } from '../storage/tables.js';

/**
 * The escaped, qualified names of an inbox's tables, from the same `schema` and
 * `tablePrefix` options the outbox takes, so an inbox beside an outbox reads as one family
 * (`outbox_events`, `outbox_inbox`). Identifiers are escaped once, here.
 */
export interface InboxTables {
  /** The inbox: one row per (consumer, event id) processed. */
  readonly inbox: string;
  /** The inbox's applied migration versions, apart from the outbox's own. */
  readonly migrations: string;
  /** The unescaped prefix, for index names. */
  readonly prefix: string;
  /** The unescaped schema, if any (PostgreSQL only). */
  readonly schema: string | undefined;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,50}$/;

/** The default table prefix: the outbox's, so the inbox's table is `outbox_inbox`. */
export const DEFAULT_INBOX_PREFIX = 'outbox_';

/**
 * Build the inbox's table names for a prefix and an optional schema.
 * @throws {ConfigurationError} for a prefix or schema that is not a plain identifier.
 */
export function inboxTables(prefix: string, schema: string | undefined): InboxTables {
  if (typeof prefix !== 'string' || !IDENT.test(`${prefix}x`)) {
    throw new ConfigurationError(
      `inbox(sequelize, { tablePrefix }) must be letters, digits and _ (got ${JSON.stringify(prefix)})`,
      { path: 'tablePrefix' },
    );
  }
  if (schema !== undefined && (typeof schema !== 'string' || !IDENT.test(schema))) {
    throw new ConfigurationError(
      `inbox(sequelize, { schema }) must be letters, digits and _ (got ${JSON.stringify(schema)})`,
      { path: 'schema' },
    );
  }
  const q = (t: string) =>
    schema ? `${quoteIdent(schema)}.${quoteIdent(prefix + t)}` : quoteIdent(prefix + t);
  return { inbox: q('inbox'), migrations: q('inbox_migrations'), prefix, schema };
}
