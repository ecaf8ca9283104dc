import type { MigrationDialect } from '../storage/migration-statements.js';
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
 * The SQL `inbox(sequelize).migrate()` runs on `dialect`, as one script to apply with your
 * own migration tool (or `npx outbox migrate --inbox --print-sql`): every statement is
 * idempotent and records its version, so `migrate()` afterwards finds nothing to do. Run
 * it in one transaction.
 */
export function inboxMigrationSql(
  dialect: MigrationDialect,
  options: InboxTableOptions = {},
): string {
  const t = inboxTables(options.tablePrefix ?? DEFAULT_INBOX_PREFIX, options.schema);
  const script = inboxMigrationScript(dialect, t);
  const label = `${t.schema ? `"${t.schema}".` : ''}"${t.prefix}inbox"`;
  const lines = [
    `-- outboxkit inbox migrations for ${dialect}, table ${label}: what inbox(sequelize).migrate() runs.`,
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
