/**
 * `outbox migrate`: create or upgrade the outbox tables; or, for a team that applies
 * schema changes through its own tool, print them (`--print-sql`) or write them as that
 * tool's migration files (`--emit umzug|sequelize-cli`); or check that none is pending
 * (`--check`, exit 2 when one is). Printing and emitting include the event columns the
 * config declares (`eventColumns`): every one with `--dialect`, what the table lacks when
 * printed against a database, a file per column and per index when emitted.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { type Command, Option } from 'commander';
import type { ResolvedEventColumn } from '../../src/declare/event-columns.js';
import { ConfigurationError } from '../../src/errors/outbox-error.js';
import { eventColumnPlan } from '../../src/event-columns/migrate.js';
import {
  describePending,
  type EventColumnPlan,
  isPending,
  refuseMismatched,
} from '../../src/event-columns/plan.js';
import { inbox } from '../../src/inbox/inbox.js';
import { inboxMigrationSql } from '../../src/inbox/sql-script.js';
import { inboxTables } from '../../src/inbox/tables.js';
import { createOutbox } from '../../src/outbox.js';
import { runtimeOf } from '../../src/runtime.js';
import {
  dialectEntries,
  dialectNamed,
  dialectsWith,
  findDialect,
  listDialects,
  supportedDialects,
} from '../../src/storage/dialects.js';
import {
  type MigrationDialect,
  migrationStatements,
} from '../../src/storage/migration-statements.js';
import type { EventColumnSpelling } from '../../src/storage/sql/dialect.js';
import {
  addEventColumnSql,
  createEventColumnIndexSql,
  eventColumnIndexName,
} from '../../src/storage/sql/event-columns.js';
import { type TableNames, tableNames } from '../../src/storage/tables.js';
import { closeDatabase, resolveDatabase } from '../connect.js';
import { EXIT } from '../exit-codes.js';
import { inboxStatus } from '../inbox-status.js';
import type { CliIo } from '../io.js';
import type { CliOutput } from '../log-format.js';
import {
  type EventColumnStep,
  eventColumnFiles,
  MIGRATION_TOOLS,
  type MigrationTool,
  migrationFiles,
  migrationStamp,
} from '../migration-files.js';
import { type ConnectionFlags, connectionOptions } from '../options.js';
import { schemaStatus } from '../schema-status.js';
import {
  refuseWithoutSchemas,
  type SchemasFlags,
  schemasOption,
  schemaTables,
} from '../schemas-option.js';
import {
  closeConfigSequelize,
  loadOrFail,
  MissingDatabaseFile,
  openSession,
  type Session,
} from '../session.js';
import { noTaskBackend } from '../task-backend.js';

export interface MigrateFlags extends ConnectionFlags, SchemasFlags {
  readonly printSql?: boolean;
  readonly dialect?: MigrationDialect;
  readonly emit?: MigrationTool;
  readonly out: string;
  readonly check?: boolean;
  /** `--inbox`: the consumer inbox's table too (docs/inbox.md). */
  readonly inbox?: boolean;
}

/** Declare the command's options on `command`. */
export function migrateCommand(command: Command): Command {
  schemasOption(
    command,
    'migrate (or --check) the outbox tables of each, creating the schema when missing',
  );
  return connectionOptions(
    command.description(
      'create or upgrade the outbox tables (idempotent); or print them, emit them for your migration tool, or check them',
    ),
  )
    .option(
      '--print-sql',
      'print the DDL migrate would run (the declared event columns included), and run nothing',
    )
    .addOption(
      new Option(
        '--dialect <dialect>',
        'with --print-sql / --emit: the SQL dialect, without a database (default: the database’s)',
      ).choices([...supportedDialects()]),
    )
    .addOption(
      new Option(
        '--emit <tool>',
        'write the migrations as migration files of your own tool',
      ).choices(MIGRATION_TOOLS),
    )
    .option('--out <dir>', 'with --emit: the folder the files go to', 'migrations')
    .option('--check', 'change nothing; exit 2 when a migration is pending (for CI and deploys)')
    .option(
      '--inbox',
      "the consumer inbox's table too (inbox(sequelize), docs/inbox.md), with the same --schema and --table-prefix",
    )
    .addHelpText(
      'after',
      `
Exit codes: 0 migrated / up to date, 1 could not run (no database, unreachable, bad config),
2 (--check) migrations pending.

Through your own migration tool:
  npx outbox migrate --print-sql --dialect postgres --schema app > outbox.sql
  npx outbox migrate --emit sequelize-cli --dialect postgres --out migrations
  npx outbox migrate --check          # in the deploy, before the relay starts

A schema per tenant (settings.tenancy: 'schema'):
  npx outbox migrate --schemas acme,globex
  npx outbox migrate --schemas acme,globex --check`,
    );
}

export async function migrate(flags: MigrateFlags, out: CliOutput, io: CliIo): Promise<number> {
  if (flags.printSql && flags.emit) {
    throw new ConfigurationError('pass --print-sql or --emit, not both', { path: 'emit' });
  }
  if (flags.inbox && flags.emit) {
    throw new ConfigurationError(
      '--inbox goes with a plain migrate, --print-sql or --check, not --emit; add inboxMigrationSql() to a migration of your own',
      { path: 'inbox' },
    );
  }
  if (flags.schemas !== undefined && (flags.printSql || flags.emit || flags.inbox)) {
    throw new ConfigurationError(
      '--schemas goes with a plain migrate or --check; print or emit one schema at a time with --schema',
      { path: 'schemas' },
    );
  }
  if (flags.printSql || flags.emit) return script(flags, out, io);
  if (flags.dialect) {
    throw new ConfigurationError('--dialect goes with --print-sql or --emit', { path: 'dialect' });
  }
  let session: Session;
  try {
    session = await openSession(flags, { mustExist: Boolean(flags.check) }, io);
  } catch (error) {
    // --check: a database that is not there yet is behind by every migration.
    if (!(error instanceof MissingDatabaseFile)) throw error;
    out.error(`${error.message} (every migration is pending)`);
    return EXIT.needsAttention;
  }
  try {
    const tenantTables = schemaTables(flags);
    if (tenantTables) return await migrateSchemas(session, flags, tenantTables, out);
    const before = await schemaStatus(session.db.sequelize, session.tables);
    const inboxAt = flags.inbox ? inboxTables(flags.tablePrefix ?? 'outbox_', flags.schema) : null;
    const inboxBefore = inboxAt ? await inboxStatus(session.db.sequelize, inboxAt) : null;
    if (flags.check) {
      if (before.state !== 'current') {
        const pending =
          before.state === 'missing'
            ? 'every migration (the tables are missing)'
            : `migrations ${before.pending.join(', ')}`;
        out.error(
          `${session.where} is behind: ${pending} pending. Run \`npx outbox migrate\` (or your tool's migrations, see --emit).`,
        );
        return EXIT.needsAttention;
      }
      if (inboxBefore && inboxBefore.state !== 'current') {
        const pending =
          inboxBefore.state === 'missing'
            ? 'every migration (its table is missing)'
            : `migrations ${inboxBefore.pending.join(', ')}`;
        out.error(
          `${session.where}: the inbox is behind: ${pending} pending. Run \`npx outbox migrate --inbox\` (or inbox(sequelize).migrate()).`,
        );
        return EXIT.needsAttention;
      }
      // The event columns the config declares (`eventColumns`), which migrate adds after the
      // library's own migrations: one it would add is pending too.
      if (session.loaded.config.eventColumns.length > 0) {
        const plan = await readEventColumnPlan(
          session,
          flags,
          flags.schema,
          out,
          'migrate --check',
        );
        if (isPending(plan)) {
          out.error(
            `${session.where} is behind: event columns pending (${describePending(plan)}). Run \`npx outbox migrate\`.`,
          );
          return EXIT.needsAttention;
        }
      }
      const inboxNote =
        inboxBefore?.state === 'current'
          ? `; inbox migrations ${inboxBefore.applied.join(', ')}`
          : '';
      out.result(
        `${session.where} is up to date (migrations ${before.applied.join(', ')}${inboxNote})`,
      );
      return EXIT.ok;
    }
    const outbox = createOutbox(session.loaded.config, {
      sequelize: session.db.sequelize,
      schema: flags.schema,
      tablePrefix: flags.tablePrefix,
      preparedStatements: flags.preparedStatements,
      logger: out.logger,
      wakeup: null,
      taskBackend: noTaskBackend(session.loaded.config, 'migrate'),
    });
    await outbox.migrate();
    await outbox.close();
    let inboxNote = '';
    if (inboxAt && inboxBefore) {
      await inbox(session.db.sequelize, {
        schema: flags.schema,
        tablePrefix: flags.tablePrefix,
      }).migrate();
      const inboxAfter = await inboxStatus(session.db.sequelize, inboxAt);
      const had = inboxBefore.state === 'missing' ? [] : inboxBefore.applied;
      const added = (inboxAfter.state === 'missing' ? [] : inboxAfter.applied).filter(
        (v) => !had.includes(v),
      );
      inboxNote =
        added.length === 0
          ? '; inbox already up to date'
          : `; inbox: applied migration ${added.join(', ')}`;
    }
    const after = await schemaStatus(session.db.sequelize, session.tables);
    const had = before.state === 'missing' ? [] : before.applied;
    const now = after.state === 'missing' ? [] : after.applied;
    const added = now.filter((v) => !had.includes(v));
    const applied =
      added.length === 0 ? 'already up to date' : `applied migration ${added.join(', ')}`;
    out.result(`migrated ${session.where}: ${applied}${inboxNote}`);
    return EXIT.ok;
  } finally {
    await session.close();
  }
}

/**
 * `--schemas`: migrate each schema's outbox tables (creating the schema), or with `--check`
 * report those behind (exit 2). One line for all of them, each schema named.
 */
async function migrateSchemas(
  session: Session,
  flags: MigrateFlags,
  tables: readonly TableNames[],
  out: CliOutput,
): Promise<number> {
  const schemas = tables.map((t) => t.schema as string);
  refuseWithoutSchemas(session.db.sequelize, schemas);
  const statusOf = () => Promise.all(tables.map((t) => schemaStatus(session.db.sequelize, t)));
  const before = await statusOf();
  if (flags.check) {
    const behind = before.flatMap((status, i) =>
      status.state === 'current'
        ? []
        : [
            `${schemas[i]} (${status.state === 'missing' ? 'tables missing' : `migrations ${status.pending.join(', ')} pending`})`,
          ],
    );
    // The declared event columns of each migrated schema: one migrate would add is pending.
    if (session.loaded.config.eventColumns.length > 0) {
      for (const [i, status] of before.entries()) {
        if (status.state !== 'current') continue;
        const plan = await readEventColumnPlan(session, flags, schemas[i], out, 'migrate --check');
        if (isPending(plan))
          behind.push(`${schemas[i]} (event columns pending: ${describePending(plan)})`);
      }
    }
    if (behind.length > 0) {
      out.error(
        `${session.where}: ${behind.length} of ${schemas.length} tenant schemas behind: ${behind.join(', ')}. Run \`npx outbox migrate --schemas ${schemas.join(',')}\`.`,
      );
      return EXIT.needsAttention;
    }
    out.result(`${session.where}: the tenant schemas ${schemas.join(', ')} are up to date`);
    return EXIT.ok;
  }
  const outbox = createOutbox(session.loaded.config, {
    sequelize: session.db.sequelize,
    tablePrefix: flags.tablePrefix,
    preparedStatements: flags.preparedStatements,
    logger: out.logger,
    wakeup: null,
    taskBackend: noTaskBackend(session.loaded.config, 'migrate'),
  });
  try {
    await outbox.migrate({ schemas });
  } finally {
    await outbox.close();
  }
  const after = await statusOf();
  const lines = schemas.map((schema, i) => {
    const was = before[i];
    const is = after[i];
    const had = was.state === 'missing' ? [] : was.applied;
    const now = is.state === 'missing' ? [] : is.applied;
    const added = now.filter((v) => !had.includes(v));
    return `${schema}: ${added.length === 0 ? 'already up to date' : `applied migration ${added.join(', ')}`}`;
  });
  out.result(`migrated the tenant schemas of ${session.where}: ${lines.join('; ')}`);
  return EXIT.ok;
}

/** `--print-sql` and `--emit`: the statements, from the dialect given or the database's. */
async function script(flags: MigrateFlags, out: CliOutput, io: CliIo): Promise<number> {
  const dialect = flags.dialect ?? (await dialectOfDatabase(flags, io));
  const entry = dialectNamed(dialect);
  if (flags.schema !== undefined && !entry.capabilities.schemas) {
    const withSchemas = listDialects(
      dialectsWith((c) => c.schemas),
      { join: 'or', titles: true },
    );
    throw new ConfigurationError(`--schema is for ${withSchemas}; ${dialect} has no schemas`, {
      path: 'schema',
    });
  }
  const tables = tableNames(flags.tablePrefix ?? 'outbox_', flags.schema);
  const statements = migrationStatements(dialect, tables);
  const label = tablesLabel(tables);
  if (flags.printSql) {
    const lines = [
      `-- outboxkit migrations for ${dialect}, tables ${label}: what \`npx outbox migrate\` runs.`,
      '-- Every statement is idempotent; run them in one transaction.',
      ...(entry.migration.beforeMigrate.length > 0
        ? [
            `-- ${entry.title}: outboxkit also sets ${entry.migration.beforeMigrate.join('; ')}, outside any transaction.`,
          ]
        : []),
      '',
      ...statements.prelude.map((s) => `${s};\n`),
      ...statements.steps.flatMap((step) => [
        `-- version ${step.version}`,
        ...step.statements.map((s) => `${s};\n`),
      ]),
    ];
    const columns = await eventColumnStatements(flags, io, out, dialect, tables);
    if (columns) lines.push('', ...columns);
    if (flags.inbox) {
      lines.push(
        '',
        inboxMigrationSql(dialect, { schema: flags.schema, tablePrefix: flags.tablePrefix }),
      );
    }
    io.stdout.write(`${lines.join('\n').trimEnd()}\n`);
    return EXIT.ok;
  }
  const tool = flags.emit as MigrationTool;
  const dir = resolve(io.cwd, flags.out);
  mkdirSync(dir, { recursive: true });
  const existing = readdirSync(dir);
  const now = new Date();
  const declared = await declaredEventColumns(flags, io);
  const spelling = entry.sql.ddl.eventColumns;
  const files = [
    ...migrationFiles(statements, tool, { dialect, tables: label, stamp: migrationStamp(now) }),
    // A second later: both tools run files in name order, and the columns need the table.
    ...eventColumnFiles(
      declared.flatMap((c): EventColumnStep[] => [
        {
          kind: 'column',
          column: c.name,
          finds: c.name,
          statement: addEventColumnSql(tables, spelling, c),
        },
        ...(c.index
          ? [
              {
                kind: 'index' as const,
                column: c.name,
                finds: eventColumnIndexName(tables, c.name),
                statement: createEventColumnIndexSql(tables, spelling, c),
              },
            ]
          : []),
      ]),
      tool,
      {
        dialect,
        tables: label,
        stamp: migrationStamp(new Date(now.getTime() + 1000)),
        introspect: { column: spelling.columnsSql(tables), index: spelling.indexesSql(tables) },
      },
    ),
  ];
  for (const file of files) {
    const already = existing.find((name) => name.includes(file.marker));
    const shown = (name: string) => relative(io.cwd, join(dir, name)) || name;
    if (already) {
      out.result(`${shown(already)} is already there (${file.describes})`);
      continue;
    }
    const path = join(dir, file.name);
    if (existsSync(path)) throw new ConfigurationError(`${path} exists`, { path: 'out' });
    writeFileSync(path, file.text);
    out.result(`wrote ${shown(file.name)} (${tool}, ${dialect}, tables ${label})`);
  }
  return EXIT.ok;
}

/**
 * `--print-sql`: the statements that add the event columns the config declares
 * (`eventColumns`, docs/event-columns.md), as comment-headed lines, or `undefined` when it
 * declares none (or there is no config). With `--dialect` nothing is read: every declared
 * column and index, as a fresh install needs. Without it, the database's events table is
 * read and only what it lacks is printed (the plan `migrate` would carry out); a table that
 * is not there yet lacks them all.
 * @throws {ConfigurationError} for a declared column the table holds with another type.
 */
async function eventColumnStatements(
  flags: MigrateFlags,
  io: CliIo,
  out: CliOutput,
  dialect: MigrationDialect,
  tables: TableNames,
): Promise<string[] | undefined> {
  const spelling = dialectNamed(dialect).sql.ddl.eventColumns;
  const declared = await declaredEventColumns(flags, io);
  if (declared.length === 0) return undefined;
  const everything = (why: string) =>
    eventColumnLines(
      declared,
      declared.filter((c) => c.index),
      `every declared column (${why})`,
      tables,
      spelling,
    );
  if (flags.dialect) return everything('no database read: what a fresh install needs');
  let session: Session;
  try {
    session = await openSession(flags, { mustExist: true }, io);
  } catch (error) {
    if (!(error instanceof MissingDatabaseFile)) throw error;
    return everything('the database file is not there yet');
  }
  try {
    const plan = await readEventColumnPlan(
      session,
      flags,
      flags.schema,
      out,
      'migrate --print-sql',
    );
    return eventColumnLines(
      plan.add,
      plan.index,
      `what the database's ${tables.events} lacks (the plan \`npx outbox migrate\` would carry out)`,
      tables,
      spelling,
    );
  } finally {
    await session.close();
  }
}

/**
 * The event columns the config declares, for `--print-sql` and `--emit`. A config given
 * with `-c` must load; the default one is optional (no config: the library's DDL alone).
 */
async function declaredEventColumns(
  flags: MigrateFlags,
  io: CliIo,
): Promise<readonly ResolvedEventColumn[]> {
  const loaded = flags.config
    ? await loadOrFail(flags.config, io.cwd)
    : await loadOrFail(undefined, io.cwd).catch(() => undefined);
  await closeConfigSequelize(loaded, undefined);
  return loaded?.config.eventColumns ?? [];
}

/** The event-column part of `--print-sql`: a comment, then each statement. */
function eventColumnLines(
  add: readonly ResolvedEventColumn[],
  index: readonly ResolvedEventColumn[],
  from: string,
  tables: TableNames,
  spelling: EventColumnSpelling,
): string[] {
  const header = [
    `-- event columns (the config's eventColumns): ${from}.`,
    '-- Not idempotent on their own: run them once, after the statements above.',
  ];
  if (add.length === 0 && index.length === 0) {
    return [header[0], '-- (nothing: the table has every declared column and index)'];
  }
  return [
    ...header,
    ...add.map((c) => `${addEventColumnSql(tables, spelling, c)};\n`),
    ...index.map((c) => `${createEventColumnIndexSql(tables, spelling, c)};\n`),
  ];
}

/** The dialect of the database the flags resolve to, without connecting. */
async function dialectOfDatabase(flags: MigrateFlags, io: CliIo): Promise<MigrationDialect> {
  const loaded = await loadOrFail(flags.config, io.cwd).catch(() => undefined);
  let db: ReturnType<typeof resolveDatabase>;
  try {
    db = resolveDatabase(
      loaded ?? { file: 'the config', sequelize: undefined },
      {
        url: flags.url,
        useUrlOverConfig: flags.useUrlOverConfig,
        connectTimeoutMs: flags.connectTimeout,
      },
      io.env,
      io.cwd,
    );
  } catch {
    await closeConfigSequelize(loaded, undefined);
    throw new ConfigurationError(
      `pass --dialect ${supportedDialects().join('|')} (or a database, --url or the config’s sequelize, to take it from)`,
      { path: 'dialect' },
    );
  }
  const name = db.sequelize.getDialect();
  if (db.owned) await closeDatabase(db);
  await closeConfigSequelize(loaded, undefined);
  if (!findDialect(name)) {
    throw new ConfigurationError(
      `outboxkit supports ${listDialects(dialectEntries(), { titles: true })}; this database is ${name}`,
      { path: 'url' },
    );
  }
  return name as MigrationDialect;
}

/** `"app"."outbox_*"`: the tables a script names. */
function tablesLabel(t: TableNames): string {
  return `${t.schema ? `"${t.schema}".` : ''}"${t.prefix}*"`;
}

/**
 * What `migrate` would add of the declared event columns to the events table of `schema`
 * (eventColumnPlan), read through an outbox made for the read alone and closed after it.
 * @throws {ConfigurationError} naming `who` for a declared column the table holds with
 *   another type.
 */
async function readEventColumnPlan(
  session: Session,
  flags: MigrateFlags,
  schema: string | undefined,
  out: CliOutput,
  who: string,
): Promise<EventColumnPlan> {
  const reading = createOutbox(session.loaded.config, {
    sequelize: session.db.sequelize,
    schema,
    tablePrefix: flags.tablePrefix,
    logger: out.logger,
    wakeup: null,
    taskBackend: noTaskBackend(session.loaded.config, 'migrate'),
  });
  try {
    const plan = await eventColumnPlan(runtimeOf(reading));
    refuseMismatched(plan, who, runtimeOf(reading).tables.events);
    return plan;
  } finally {
    await reading.close();
  }
}
