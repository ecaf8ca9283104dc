import { ConfigurationError } from '../errors/outbox-error.js';

/** The escaped, qualified names of the outbox's tables. Identifiers are escaped once, here. */
export interface TableNames {
  readonly events: string;
  readonly deliveries: string;
  readonly lastSuccess: string;
  readonly migrations: string;
  readonly relayLock: string;
  /** The unescaped prefix, for index names. */
  readonly prefix: string;
  /** The unescaped schema, if any. */
  readonly schema: string | undefined;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,50}$/;

/** Quote an SQL identifier (the same quoting serves PostgreSQL and SQLite). */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Build the table names for a prefix and an optional schema (PostgreSQL only).
 * @throws {ConfigurationError} for a prefix or schema that is not a plain identifier.
 */
export function tableNames(prefix: string, schema: string | undefined): TableNames {
  if (!IDENT.test(`${prefix}x`)) {
    throw new ConfigurationError(
      `createOutbox({ tablePrefix }) must be letters, digits and _ (got ${JSON.stringify(prefix)})`,
      {
        path: 'tablePrefix',
      },
    );
  }
  if (schema !== undefined && !IDENT.test(schema)) {
    throw new ConfigurationError(
      `createOutbox({ schema }) must be letters, digits and _ (got ${JSON.stringify(schema)})`,
      {
        path: 'schema',
      },
    );
  }
  const q = (t: string) =>
    schema ? `${quoteIdent(schema)}.${quoteIdent(prefix + t)}` : quoteIdent(prefix + t);
  return {
    events: q('events'),
    deliveries: q('deliveries'),
    lastSuccess: q('receiver_last_success'),
    migrations: q('migrations'),
    relayLock: q('relay_lock'),
    prefix,
    schema,
  };
}
