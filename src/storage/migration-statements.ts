import { ConfigurationError } from '../errors/outbox-error.js';
import { type DialectName, dialectNamed, dialectsWith, listDialects } from './dialects.js';
import { type MigrationScript, renderMigrations } from './sql/migrate.js';
import type { TableNames } from './tables.js';

/**
 * The dialects whose migrations can be rendered as a script: every dialect of the
 * registry. (An alias kept for the CLI's `--dialect`; new code says {@link DialectName}.)
 */
export type MigrationDialect = DialectName;

/**
 * The DDL `outbox.migrate()` would run on `dialect` for `tables`, without running it
 * (`npx outbox migrate --print-sql`, `--emit umzug|sequelize-cli`): the migrations not in
 * `applied` (all of them by default). See {@link renderMigrations}.
 * @throws {ConfigurationError} for a dialect outboxkit does not support, or tables in a
 * schema on a dialect without schemas.
 */
export function migrationStatements(
  dialect: DialectName,
  tables: TableNames,
  applied?: ReadonlySet<number>,
): MigrationScript {
  const entry = dialectNamed(dialect, { who: 'migrationStatements(dialect)' });
  if (tables.schema !== undefined && !entry.capabilities.schemas) {
    throw new ConfigurationError(
      `migrationStatements(dialect, tables): a schema is for ${listDialects(
        dialectsWith((c) => c.schemas),
        { join: 'or', titles: true },
      )}; ${entry.name} has no schemas`,
      { path: 'schema' },
    );
  }
  return renderMigrations(entry.migration.profile(tables), tables, applied);
}
