/**
 * `inbox(sequelize, options)`: the consumer's side of the outbox. See `handle.ts` for what
 * it guarantees and `docs/inbox.md` for how to use it with each transport.
 */
import type { Sequelize } from 'sequelize';
import { ConfigurationError } from '../errors/outbox-error.js';
import { dialectOf } from '../storage/dialects.js';
import type { InboxContext } from './context.js';
import { type HandleOptions, handleMessage, type InboxResult, type InboxWork } from './handle.js';
import type { InboxMessage } from './message.js';
import { INBOX_TEXT_MAX } from './message.js';
import { migrateInbox } from './migrate.js';
import { type InboxPruneOptions, pruneInbox } from './prune.js';
import { inboxMigrationSqlOf, refuseSchema } from './sql-script.js';
import { inboxStatements } from './statements.js';
import { DEFAULT_INBOX_PREFIX, inboxTables } from './tables.js';

/** Options of {@link inbox}. */
export interface InboxOptions {
  /**
   * The consumer this inbox deduplicates for: each consumer of the same events (a billing
   * service and a search indexer sharing one database) processes each message once of its
   * own, so their rows are kept apart by this name. Keep it stable: a new name processes
   * every redelivered message again.
   * @defaultValue `'default'`
   */
  readonly consumer?: string;
  /**
   * A PostgreSQL schema for the inbox's tables (created by `migrate()`), as the outbox's
   * `schema` option. @defaultValue the connection's search path (usually `public`)
   */
  readonly schema?: string;
  /**
   * The prefix of the inbox's table names, as the outbox's `tablePrefix`: the table is
   * `<prefix>inbox`, its migration versions `<prefix>inbox_migrations`.
   * @defaultValue `'outbox_'`
   */
  readonly tablePrefix?: string;
  /** The clock `received_at` and `processed_at` are read from. @defaultValue `() => new Date()` */
  readonly clock?: () => Date;
}

/** A consumer's inbox: process each message once. Made by {@link inbox}. */
export interface Inbox {
  /** The consumer whose rows this inbox reads and writes. */
  readonly consumer: string;
  /**
   * Run `work` for `message` unless it was processed before: the event id is recorded in
   * the inbox in the same transaction as `work`, so it commits with the work or not at all.
   * A redelivery of a processed message resolves to `duplicate` without running `work`; a
   * `work` that throws rolls back both and rejects with its error (the message is
   * processed again when it comes again). Acknowledge the broker's message after this
   * resolves, whichever the status.
   * @throws {ValidationError} for a message without an event id, before anything runs.
   */
  handle<T>(
    message: InboxMessage,
    work: InboxWork<T>,
    options?: HandleOptions,
  ): Promise<InboxResult<T>>;
  /**
   * Create or upgrade the inbox's table. Idempotent, and safe when two processes run it at
   * once (PostgreSQL: an advisory lock; SQLite: an immediate transaction).
   */
  migrate(): Promise<void>;
  /** The SQL `migrate()` runs, as a script, for a team applying it with its own tool. */
  migrationSql(): string;
  /** Delete this consumer's rows received before `olderThan`; resolves to how many went. */
  prune(options: InboxPruneOptions): Promise<number>;
}

/**
 * An inbox on the application's Sequelize (any dialect of the registry, `storage/dialects.ts`), for one consumer.
 *
 * ```ts
 * const orders = inbox(sequelize, { consumer: 'billing' });
 * await orders.migrate();
 * const result = await orders.handle(fromKafka(message), async (transaction) => {
 *   await Invoice.create({ orderId }, { transaction });
 * });
 * // result.status: 'processed' | 'duplicate'
 * ```
 * @throws {ConfigurationError} for an unsupported dialect, or an option that is wrong.
 */
export function inbox(sequelize: Sequelize, options: InboxOptions = {}): Inbox {
  if (
    !sequelize ||
    typeof sequelize.query !== 'function' ||
    typeof sequelize.transaction !== 'function'
  ) {
    throw new ConfigurationError('inbox(sequelize) needs your Sequelize instance', {
      path: 'sequelize',
    });
  }
  const dialect = dialectOf(sequelize, { who: 'inbox(sequelize)' });
  refuseSchema(dialect, options.schema, 'inbox(sequelize, { schema })');
  const consumer = options.consumer ?? 'default';
  if (typeof consumer !== 'string' || consumer === '' || consumer.length > INBOX_TEXT_MAX) {
    throw new ConfigurationError(
      `inbox(sequelize, { consumer }) must be a non-empty string of at most ${INBOX_TEXT_MAX} characters (got ${JSON.stringify(consumer)})`,
      { path: 'consumer' },
    );
  }
  if (options.clock !== undefined && typeof options.clock !== 'function') {
    throw new ConfigurationError(
      'inbox(sequelize, { clock }) must be a function returning a Date',
      {
        path: 'clock',
      },
    );
  }
  const tables = inboxTables(options.tablePrefix ?? DEFAULT_INBOX_PREFIX, options.schema);
  dialect.configureConnections(sequelize);
  const c: InboxContext = {
    sequelize,
    dialect,
    sql: dialect.sql,
    runner: dialect.runner(sequelize),
    tables,
    consumer,
    clock: options.clock ?? (() => new Date()),
  };
  const statements = inboxStatements(tables, c.sql);
  return {
    consumer,
    handle: (message, work, handleOptions) =>
      handleMessage(c, statements, message, work, handleOptions),
    migrate: () => migrateInbox(c),
    migrationSql: () =>
      inboxMigrationSqlOf(dialect, {
        schema: options.schema,
        tablePrefix: options.tablePrefix,
      }),
    prune: (pruneOptions) => pruneInbox(c, statements, pruneOptions),
  };
}
