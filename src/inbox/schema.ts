/**
 * The inbox's schema, as numbered migrations of its own (a versions table apart from the
 * outbox's, so an inbox can live in a consumer's database with no outbox in it, and the
 * outbox's `migrate --check` never counts the inbox's versions as its own). Column types
 * are the outbox schema's logical ones, spelled by the same {@link DdlDialect}: text
 * columns as `varchar(255)` / TEXT, timestamps as `timestamptz` on PostgreSQL and epoch
 * milliseconds (INTEGER) on SQLite. Every statement is idempotent (`IF NOT EXISTS`). A
 * migration never changes once released: a later change is a new version.
 */

import type { DialectEntry } from '../storage/dialect-entry.js';
import type { ColumnType, DdlDialect } from '../storage/sql/dialect.js';
import type { MigrationScript } from '../storage/sql/migrate.js';
import { quoteIdent } from '../storage/tables.js';
import type { InboxTables } from './tables.js';

/** One column of an inbox table. */
interface Column {
  readonly name: string;
  readonly type: ColumnType;
  readonly notNull?: true;
}

/** One inbox migration: its statements, rendered for a dialect. */
interface InboxMigration {
  readonly version: number;
  readonly statements: (t: InboxTables, ddl: DdlDialect) => string[];
}

const table = (
  name: string,
  columns: readonly Column[],
  primaryKey: readonly string[],
  ddl: DdlDialect,
): string => {
  const lines = columns.map((c) =>
    [c.name, ddl.columnType(c.type), c.notNull && 'NOT NULL'].filter(Boolean).join(' '),
  );
  lines.push(`PRIMARY KEY (${primaryKey.join(', ')})`);
  return `CREATE TABLE IF NOT EXISTS ${name} (\n  ${lines.join(',\n  ')}\n)`;
};

/** The inbox's versions table, created before any migration. */
function versionsTable(t: InboxTables, ddl: DdlDialect): string {
  return table(
    t.migrations,
    [
      { name: 'version', type: 'integer', notNull: true },
      { name: 'applied_at', type: 'timestamp', notNull: true },
    ],
    ['version'],
    ddl,
  );
}

/** The migrations, in order. */
const INBOX_MIGRATIONS: readonly InboxMigration[] = [
  {
    version: 1,
    statements: (t, ddl) => [
      // One row per message a consumer processed. The primary key is what makes a
      // redelivery a duplicate: the second INSERT of (consumer, event_id) conflicts, and
      // on PostgreSQL it waits for the first's transaction before it knows.
      table(
        t.inbox,
        [
          { name: 'consumer', type: 'name', notNull: true },
          { name: 'event_id', type: 'name', notNull: true },
          { name: 'topic', type: 'name' },
          { name: 'received_at', type: 'timestamp', notNull: true },
          { name: 'processed_at', type: 'timestamp' },
        ],
        ['consumer', 'event_id'],
        ddl,
      ),
      // The prune: a consumer's rows by age, oldest first.
      `CREATE INDEX IF NOT EXISTS ${quoteIdent(`${t.prefix}inbox_received`)} ON ${t.inbox} (consumer, received_at)`,
    ],
  },
];

/** Every inbox migration version, in order. */
export const INBOX_MIGRATION_VERSIONS: readonly number[] = INBOX_MIGRATIONS.map((m) => m.version);

/** The statements run first: the schema (where the dialect has schemas), then the versions table. */
export function inboxPrelude(dialect: DialectEntry, t: InboxTables): string[] {
  return [
    ...(dialect.capabilities.schemas && t.schema
      ? [`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(t.schema)}`]
      : []),
    versionsTable(t, dialect.sql.ddl),
  ];
}

/** The statements of one migration, without the row recording it. */
export function inboxMigrationBody(
  dialect: DialectEntry,
  t: InboxTables,
  version: number,
): string[] {
  const m = INBOX_MIGRATIONS.find((x) => x.version === version);
  if (!m) throw new Error(`no inbox migration ${version}`);
  return m.statements(t, dialect.sql.ddl);
}

/**
 * The DDL `inbox.migrate()` runs on `dialect`, without running it, for a team that applies
 * schema changes through its own tool: the migrations not in `applied` (all by default),
 * each step recording its version (`ON CONFLICT DO NOTHING`), so `inbox.migrate()` later
 * sees it applied. Run them in one transaction.
 */
export function inboxMigrationScript(
  dialect: DialectEntry,
  t: InboxTables,
  applied: ReadonlySet<number> = new Set(),
): MigrationScript {
  const spell = dialect.migration.scriptSpelling ?? ((sql: string) => sql);
  return {
    prelude: inboxPrelude(dialect, t).map(spell),
    steps: INBOX_MIGRATION_VERSIONS.filter((v) => !applied.has(v)).map((version) => ({
      version,
      statements: [
        ...inboxMigrationBody(dialect, t, version),
        dialect.sql.insertSkippingDuplicates(
          `INSERT INTO ${t.migrations} (version, applied_at) VALUES (${version}, ${dialect.migration.nowSql})`,
          ['version'],
        ),
      ].map(spell),
    })),
  };
}
