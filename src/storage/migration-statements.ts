import { postgresMigrationProfile } from './postgres/migration.js';
import { type MigrationScript, renderMigrations } from './sql/migrate.js';
import { sqliteMigrationProfile } from './sqlite/migration.js';
import type { TableNames } from './tables.js';

/** The dialects whose migrations can be rendered as a script. */
export type MigrationDialect = 'postgres' | 'sqlite';

/**
 * The DDL `outbox.migrate()` would run on `dialect` for `tables`, without running it
 * (`npx outbox migrate --print-sql`, `--emit umzug|sequelize-cli`): the migrations not in
 * `applied` (all of them by default). See {@link renderMigrations}.
 */
export function migrationStatements(
  dialect: MigrationDialect,
  tables: TableNames,
  applied?: ReadonlySet<number>,
): MigrationScript {
  const profile =
    dialect === 'postgres' ? postgresMigrationProfile(tables) : sqliteMigrationProfile();
  return renderMigrations(profile, tables, applied);
}
