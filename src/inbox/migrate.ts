/**
 * `inbox.migrate()`: create or upgrade the inbox's table, the way the outbox's migrate
 * loop does it — in a transaction only one migrator holds at a time (PostgreSQL: an
 * advisory lock on the tables' name; SQLite: an IMMEDIATE transaction, the write lock),
 * read which versions are applied, apply the rest in order, each recorded in the same
 * transaction. Idempotent, and safe when two processes run it at once.
 */
import type { InboxContext } from './context.js';
import { INBOX_MIGRATION_VERSIONS, inboxMigrationBody, inboxPrelude } from './schema.js';

export async function migrateInbox(c: InboxContext): Promise<void> {
  const { runner, tables: t } = c;
  const { migration } = c.dialect;
  for (const statement of migration.beforeMigrate) await runner.run(statement, []);
  const exclusively = migration.exclusively(
    c.sequelize,
    runner,
    `outboxkit-inbox:${t.schema ?? 'public'}:${t.prefix}`,
  );
  await exclusively(async (transaction) => {
    for (const statement of inboxPrelude(c.dialect, t))
      await runner.run(statement, [], transaction);
    const applied = await runner.select<{ version: number }>(
      `SELECT version FROM ${t.migrations}`,
      [],
      transaction,
    );
    const done = new Set(applied.map((r) => Number(r.version)));
    for (const version of INBOX_MIGRATION_VERSIONS) {
      if (done.has(version)) continue;
      for (const statement of inboxMigrationBody(c.dialect, t, version))
        await runner.run(statement, [], transaction);
      await runner.run(
        `INSERT INTO ${t.migrations} (version, applied_at) VALUES ($1, $2)`,
        [version, c.sql.value(c.clock(), 'timestamp')],
        transaction,
      );
    }
  });
}
