/**
 * What the operator's commands (`dead`, `requeue-dead`, `replay`, `cancel`) share: a
 * session on a migrated database, an outbox over it (no wakeup: these commands deliver
 * nothing), closed again whatever happens; `--json` output; the repeatable options.
 */
import { ConfigurationError } from '../src/errors/outbox-error.js';
import { createOutbox, type Outbox } from '../src/outbox.js';
import { findDialect, wakeupRefusal } from '../src/storage/dialects.js';
import { type TableNames, tableNames } from '../src/storage/tables.js';
import type { OutboxWakeup } from '../src/wakeups/wakeup.js';
import type { CliIo, CliStream } from './io.js';
import type { CliOutput } from './log-format.js';
import type { ConnectionFlags } from './options.js';
import { schemaStatus } from './schema-status.js';
import { openSession, type Session } from './session.js';
import { noTaskBackend } from './task-backend.js';

/** The flags every operation command takes besides the connection's. */
export interface OperationFlags extends ConnectionFlags {
  /** `--json`: the result as one JSON document on stdout. */
  readonly json?: boolean;
  /**
   * `--tenant`, of the commands that take one: under a schema per tenant
   * (`settings.tenancy: 'schema'`) it picks the schema the operation runs on (the CLI has no
   * `tenantSchema` mapping, so the schema of the tenant's name).
   */
  readonly tenant?: string;
}

/** Collect a repeatable option's values. */
export const repeatable = (value: string, previous: readonly string[] | undefined): string[] => [
  ...(previous ?? []),
  value,
];

/**
 * Open a session (refusing a missing SQLite file or tables not migrated, exit 1), make an
 * outbox on it, run `work`, and close both.
 *
 * `wakeRelays`: for a command that makes rows owed (`requeue-dead`, `replay`), the outbox
 * gets the wakeup `outbox relay` listens on where the database serves it — PostgreSQL's
 * LISTEN/NOTIFY, on its default channel — so the operation's NOTIFY, sent on its commit,
 * wakes a relay running in another process at once. It only NOTIFYs: nothing LISTENs, no
 * connection is opened for it. Elsewhere (SQLite) the relay's poll picks the rows up.
 */
export async function withOutbox(
  flags: OperationFlags,
  out: CliOutput,
  io: Pick<CliIo, 'env' | 'cwd'>,
  work: (outbox: Outbox, session: Session) => Promise<number>,
  options: { readonly wakeRelays?: boolean } = {},
): Promise<number> {
  const session = await openSession(flags, { mustExist: true }, io);
  try {
    await requireMigrated(session, operationTables(session, flags));
    const outbox = createOutbox(session.loaded.config, {
      sequelize: session.db.sequelize,
      schema: flags.schema,
      tablePrefix: flags.tablePrefix,
      preparedStatements: flags.preparedStatements,
      logger: out.logger,
      wakeup: options.wakeRelays ? await relayWakeup(session) : null,
      taskBackend: noTaskBackend(session.loaded.config, 'operations'),
    });
    try {
      return await work(outbox, session);
    } finally {
      await outbox.close();
    }
  } finally {
    await session.close();
  }
}

/**
 * The tables an operation reads: under a schema per tenant (`settings.tenancy: 'schema'`),
 * a `--tenant` operation's are the tenant's schema's (the schema of the tenant's name: the
 * CLI has no `tenantSchema`); otherwise the session's.
 */
export function operationTables(session: Session, flags: OperationFlags): TableNames {
  if (session.loaded.config.settings.tenancy !== 'schema' || flags.tenant === undefined)
    return session.tables;
  return tableNames(flags.tablePrefix ?? 'outbox_', flags.tenant);
}

/**
 * The wakeup `outbox relay` listens on (LISTEN/NOTIFY), where this database serves it (its
 * dialect's capabilities say, see `wakeupRefusal`); else none, and the relay polls. A
 * dialect outboxkit has no entry for gets none: `createOutbox` refuses it by name.
 */
/**
 * Refuse, naming the database and the fix, unless the outbox tables exist with every
 * migration applied: an operation (or the console) on a database behind would fail on a
 * missing table or column halfway through.
 */
export async function requireMigrated(
  session: Session,
  tables: TableNames = session.tables,
): Promise<void> {
  const status = await schemaStatus(session.db.sequelize, tables);
  if (status.state !== 'current') {
    const what =
      status.state === 'missing'
        ? 'the outbox tables are missing'
        : `migrations ${status.pending.join(', ')} are pending`;
    const tenantSchema = tables === session.tables ? undefined : tables.schema;
    const where = tenantSchema ? `${session.where}, tenant schema ${tenantSchema}` : session.where;
    const fix = tenantSchema ? ` --schemas ${tenantSchema}` : '';
    throw new ConfigurationError(
      `${where}: ${what}. Run \`npx outbox migrate${fix}\` (with the same database options) first.`,
      { path: 'url' },
    );
  }
}

export async function relayWakeup(session: Session): Promise<OutboxWakeup | null> {
  const { listenNotifyWakeup } = await import('../src/wakeups/listen-notify.js');
  const wakeup = listenNotifyWakeup();
  const entry = findDialect(session.db.sequelize.getDialect());
  const served = entry !== undefined && wakeupRefusal(entry, wakeup.capabilities) === undefined;
  return served ? wakeup : null;
}

/** Write `value` as one JSON document on `stdout` (`--json`). */
export function printJson(stdout: CliStream, value: unknown): void {
  stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** The exit codes the operation commands' help prints. */
export const OPERATION_EXIT_HELP = (two: string) => `
Exit codes:
  0  done
  1  could not run: no or bad config, no database, unreachable within --connect-timeout,
     outbox tables missing or behind (run \`npx outbox migrate\`), a bad argument
  2  ${two}`;
