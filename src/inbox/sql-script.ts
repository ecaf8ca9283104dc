import { ConfigurationError } from '../errors/outbox-error.js';
import type { DialectEntry } from '../storage/dialect-entry.js';
import { type DialectName, dialectNamed, dialectsWith, listDialects } from '../storage/dialects.js';
import { inboxMigrationScript } from './schema.js';
import { DEFAULT_INBOX_PREFIX, inboxTables } from './tables.js';

/** Where the inbox's tables are, for {@link inboxMigrationSql}. */
export interface InboxTableOptions {
  /** As `inbox()`'s `schema` (PostgreSQL only). */
  readonly schema?: string | undefined;
  /** As `inbox()`'s `tablePrefix`. @defaultValue `'outbox_'` */
  readonly tablePrefix?: string | undefined;
}

/**
 * Refuse a `schema` option on a dialect without schemas, naming those that have them.
 * @throws {ConfigurationError} at `schema`.
 */
export function refuseSchema(
  entry: DialectEntry,
  schema: string | undefined,
  option: string,
): void {
  if (schema === undefined || entry.capabilities.schemas) return;
  throw new ConfigurationError(
    `${option} is for ${listDialects(
      dialectsWith((c) => c.schemas),
      { join: 'or', titles: true },
    )}; ${entry.name} has no schemas`,
    { path: 'schema' },
  );
}

/**
 * The SQL `inbox(sequelize).migrate()` runs on `dialect`, as one script to apply with your
 * own migration tool (or `npx outbox migrate --inbox --print-sql`): every statement is
 * idempotent and records its version, so `migrate()` afterwards finds nothing to do. Run
 * it in one transaction.
 */
export function inboxMigrationSql(dialect: DialectName, options: InboxTableOptions = {}): string {
  const entry = dialectNamed(dialect, { who: 'inboxMigrationSql(dialect)' });
  refuseSchema(entry, options.schema, 'inboxMigrationSql(dialect, { schema })');
  return inboxMigrationSqlOf(entry, options);
}

/** {@link inboxMigrationSql} for a dialect's registry entry. */
export function inboxMigrationSqlOf(entry: DialectEntry, options: InboxTableOptions = {}): string {
  const t = inboxTables(options.tablePrefix ?? DEFAULT_INBOX_PREFIX, options.schema);
  const script = inboxMigrationScript(entry, t);
  const label = `${t.schema ? `"${t.schema}".` : ''}"${t.prefix}inbox"`;
  const lines = [
    `-- outboxkit inbox migrations for ${entry.name}, table ${label}: what inbox(sequelize).migrate() runs.`,
    '-- Every statement is idempotent; run them in one transaction.',
    '',
    ...script.prelude.map((s) => `${s};\n`),
    ...script.steps.flatMap((step) => [
      `-- inbox version ${step.version}`,
      ...step.statements.map((s) => `${s};\n`),
    ]),
  ];
  return `${lines.join('\n').trimEnd()}\n`;
}
