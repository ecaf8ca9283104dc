/**
 * The migrate loop, written once: in a transaction that only one migrator holds at a
 * time, create the versions table, read which versions are applied, apply the rest in
 * order (each recorded in the same transaction), then refresh the planner's statistics of
 * the tables this run created. Dialects supply how to hold the transaction exclusively and
 * how statistics are refreshed.
 */
import type { Transaction } from 'sequelize';
import type { TableNames } from '../tables.js';
import type { SqlDialect, SqlRunner } from './dialect.js';
import {
  MIGRATIONS,
  MIGRATIONS_TABLE,
  type Migration,
  renderMigration,
  renderTable,
  type SchemaOptions,
  tablesOf,
} from './schema.js';

/** What the loop needs of a dialect. */
export interface MigrationHost {
  readonly tables: TableNames;
  readonly dialect: SqlDialect;
  readonly runner: SqlRunner;
  readonly schema: SchemaOptions;
  /**
   * Run `work` in a transaction that no other migrator of these tables runs at the same
   * time (PostgreSQL: an advisory lock; SQLite: an IMMEDIATE transaction, the write lock).
   */
  exclusively(work: (transaction: Transaction) => Promise<void>): Promise<void>;
  /** Statements run first, inside that transaction (PostgreSQL: CREATE SCHEMA). */
  readonly prelude: readonly string[];
  /**
   * Statements that refresh the planner's statistics of the tables named (escaped), run
   * after a migration created them, in the same transaction. PostgreSQL: ANALYZE, since a
   * never-analyzed table is planned from a guess (claims measured 8x slower until
   * autovacuum came round). SQLite: none. Its ANALYZE would record the new indexes as
   * empty (sqlite_stat1 `0 0`), and SQLite never refreshes statistics by itself, so its
   * planner would go on believing that of a table grown large.
   */
  analyze(tables: readonly string[]): readonly string[];
  /**
   * The statements of one migration where the dialect writes its schema its own way
   * (MariaDB: the whole schema at version 1, see mariadb/migration.ts); by default the
   * shared description rendered with {@link schema}'s DDL spelling.
   */
  readonly statementsOf?: ((m: Migration, t: TableNames) => readonly string[]) | undefined;
}

/**
 * What a dialect's migrations need besides the statements themselves: how the schema is
 * spelled, what runs first, and how the current time is written in SQL. The store's
 * `migrate()` and {@link renderMigrations} (the script `outbox migrate --print-sql`
 * prints) read the same profile, so the two cannot drift.
 */
export interface MigrationProfile {
  readonly schema: SchemaOptions;
  /** Statements run first, inside the migration's transaction (PostgreSQL: CREATE SCHEMA). */
  readonly prelude: readonly string[];
  /** The current time as the migrations table's `applied_at` holds it, in SQL. */
  readonly nowSql: string;
  /** See {@link MigrationHost.statementsOf}. */
  readonly statementsOf?: ((m: Migration, t: TableNames) => readonly string[]) | undefined;
  /**
   * The script's idempotent statement recording `version` as applied, where the dialect
   * has no `ON CONFLICT` (MariaDB: `INSERT IGNORE`).
   */
  readonly recordVersionSql?: ((t: TableNames, version: number) => string) | undefined;
  /**
   * How a script's statement is spelled for the database's own client, where it differs
   * from the text the store runs through its runner (MariaDB: double-quoted identifiers in
   * backticks, mariadb/runner.ts).
   */
  readonly scriptSpelling?: ((sql: string) => string) | undefined;
}

/** One migration as a script: its version and every statement that applies it. */
export interface MigrationScriptStep {
  readonly version: number;
  /** Its tables and indexes, then the row recording the version as applied. */
  readonly statements: readonly string[];
}

/** The migrations as statements to run in order, without running them. */
export interface MigrationScript {
  /** The prelude and the versions table: run before any step. */
  readonly prelude: readonly string[];
  readonly steps: readonly MigrationScriptStep[];
}

/**
 * The statements `migrate()` runs for the migrations not in `applied`, as text: for a team
 * that applies schema changes through its own tool (Umzug, sequelize-cli, a DBA). Every
 * statement is idempotent (`IF NOT EXISTS`, and the version row `ON CONFLICT DO NOTHING`;
 * except SQLite's `ADD COLUMN`, which has no `IF NOT EXISTS`: run a step once),
 * and each step records its version, so `outbox migrate --check` and the relay see it
 * applied. Not included: PostgreSQL's ANALYZE of new tables (autovacuum gets to them), and
 * SQLite's `PRAGMA journal_mode=WAL`, which cannot run in a transaction.
 */
export function renderMigrations(
  profile: MigrationProfile,
  t: TableNames,
  applied: ReadonlySet<number> = new Set(),
): MigrationScript {
  const spell = profile.scriptSpelling ?? ((sql: string) => sql);
  return {
    prelude: [...profile.prelude, renderTable(MIGRATIONS_TABLE, t, profile.schema.ddl)].map(spell),
    steps: MIGRATIONS.filter((m) => !applied.has(m.version)).map((m) => ({
      version: m.version,
      statements: [
        ...(profile.statementsOf?.(m, t) ?? renderMigration(m, t, profile.schema)),
        profile.recordVersionSql?.(t, m.version) ??
          `INSERT INTO ${t.migrations} (version, applied_at) VALUES (${m.version}, ${profile.nowSql}) ON CONFLICT (version) DO NOTHING`,
      ].map(spell),
    })),
  };
}

/** Every migration version, in order: what a database is behind when it lacks one. */
export const MIGRATION_VERSIONS: readonly number[] = MIGRATIONS.map((m) => m.version);

/** Apply the migrations not yet applied. Idempotent; safe when two processes run it at once. */
export async function migrate(host: MigrationHost): Promise<void> {
  const { tables: t, runner, dialect: d } = host;
  await host.exclusively(async (transaction) => {
    for (const statement of host.prelude) await runner.run(statement, [], transaction);
    await runner.run(renderTable(MIGRATIONS_TABLE, t, host.schema.ddl), [], transaction);
    const applied = await runner.select<{ version: number }>(
      `SELECT version FROM ${t.migrations}`,
      [],
      transaction,
    );
    const done = new Set(applied.map((r) => Number(r.version)));
    const created: string[] = [];
    for (const migration of MIGRATIONS) {
      if (done.has(migration.version)) continue;
      for (const statement of host.statementsOf?.(migration, t) ??
        renderMigration(migration, t, host.schema))
        await runner.run(statement, [], transaction);
      await runner.run(
        `INSERT INTO ${t.migrations} (version, applied_at) VALUES ($1, $2)`,
        [migration.version, d.value(new Date(), 'timestamp')],
        transaction,
      );
      created.push(...tablesOf(migration, host.schema).map((s) => t[s.table]));
    }
    if (created.length > 0) created.push(t.migrations);
    for (const statement of host.analyze([...new Set(created)]))
      await runner.run(statement, [], transaction);
  });
}
