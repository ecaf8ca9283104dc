import type { ClientConfig, Client as PgClient } from 'pg';
import { checkOptionNames, optionNames } from '../declare/option-keys.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import { consoleLogger, type OutboxLogger } from '../observe/logger.js';
import { dialectsWith, findDialect, listDialects } from '../storage/dialects.js';
import { checkMaxFailures, reconnectingSubscription } from './reconnecting-subscription.js';
import type { OutboxWakeup, WakeupConnection, WakeupListenContext } from './wakeup.js';

/**
 * How the listener connects: node-postgres's `ClientConfig` (the common fields are named
 * here; any other of its options is passed on as given). Typed here rather than imported
 * from `pg`, so outboxkit's declarations type-check in an app without `@types/pg` (`pg` is
 * an optional peer: a SQLite app never installs it).
 */
export interface ListenConnection {
  readonly connectionString?: string;
  readonly host?: string;
  readonly port?: number;
  readonly user?: string;
  readonly password?: string | (() => string | Promise<string>);
  readonly database?: string;
  /** TLS: `true`, or node:tls connection options. */
  readonly ssl?: boolean | Readonly<Record<string, unknown>>;
  readonly keepAlive?: boolean;
  readonly connectionTimeoutMillis?: number;
  readonly application_name?: string;
  /** Any other node-postgres client option. */
  readonly [option: string]: unknown;
}

/** Options of {@link listenNotifyWakeup}. */
export interface ListenNotifyOptions {
  /**
   * The channel to NOTIFY and LISTEN on: a lower-case PostgreSQL identifier (letters,
   * digits, `_`; at most 63 characters). Give each outbox sharing one database its own.
   * @defaultValue `'outboxkit'`
   */
  readonly channel?: string;
  /**
   * How to connect the listening client (node-postgres settings). When omitted, the
   * connection settings of the outbox's own database are used, which the relay hands to
   * `listen()`. Set it when the listener must connect differently (through TLS options
   * Sequelize does not pass on, or past a transaction-pooling PgBouncer, which cannot
   * hold a LISTEN).
   * @defaultValue the outbox database's settings
   */
  readonly connection?: ListenConnection;
  /** Where reconnect failures are logged. @defaultValue the listening outbox's logger, else the console logger */
  readonly logger?: OutboxLogger;
  /**
   * On which failed (re)connection in a row the listener gives up with an ERROR (the
   * shared reconnect loop of every wakeup); the relay keeps polling either way.
   * @defaultValue 5
   */
  readonly maxFailures?: number;
  /**
   * At most one NOTIFY per this many milliseconds from one outbox instance (one per process
   * and database), the domain-events reference's `NOTIFY_COALESCE_SECONDS`. PostgreSQL
   * serialises the commits of every transaction that queued a NOTIFY on one lock, so under
   * many concurrent producers the wakeup caps their commits; a relay needs one signal per
   * interval, since one wake claims everything owed. The first write of an interval
   * carries its NOTIFY as usual; the writes after it carry none, and their topics go out in
   * ONE trailing NOTIFY once the interval ends, sent after they committed — never lost, at
   * most this much later. 0 (the default) notifies in every write. Try 10–50 under a few
   * hundred writes a second from one process; the relay's latency grows by up to this.
   * @defaultValue 0 (no coalescing)
   */
  readonly notifyCoalesceMs?: number;
}

/** The dialects whose databases have LISTEN/NOTIFY (their capabilities say). */
const LISTEN_NOTIFY_DIALECTS = dialectsWith((c) => c.listenNotify);

/** The channel when none is given. */
const DEFAULT_CHANNEL = 'outboxkit';
/** A channel is written into `LISTEN "…"` unescaped, so only plain identifiers pass. */
const CHANNEL_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** Every option of {@link listenNotifyWakeup}, to refuse a misspelt one. */
const LISTEN_NOTIFY_OPTIONS = optionNames<ListenNotifyOptions>()([
  'channel',
  'connection',
  'logger',
  'maxFailures',
  'notifyCoalesceMs',
]);

/**
 * Wake relays through PostgreSQL `LISTEN/NOTIFY`. `fire()` queues a `NOTIFY` (one per
 * topic) inside the same statement that writes the event, so PostgreSQL sends it exactly
 * when the transaction commits and never for a rollback, and folds the repeats of one
 * transaction into one. Each relay holds one dedicated connection that LISTENs; a lost
 * connection is re-opened with backoff while the relay goes on polling, and once it is
 * back every listener is signalled (with no topics), since a NOTIFY sent while it was
 * down was lost.
 *
 * Capabilities: `notifyInWrite` on its channel, so `createOutbox` needs a database whose
 * capabilities have `listenNotify` (the store notifies in its write, and `signal()` here
 * does nothing); `dialects` lists those of the registry that have it (`['postgres']`), for
 * a caller choosing a wakeup by its database. Each signal names one topic: the
 * notification's payload.
 *
 * With `notifyCoalesceMs`, at most one NOTIFY per interval per outbox instance, the rest
 * folded into a trailing one (see {@link ListenNotifyOptions.notifyCoalesceMs}).
 *
 * @throws ConfigurationError when the channel is not a lower-case identifier, or
 * `notifyCoalesceMs` is not a number ≥ 0.
 */
export function listenNotifyWakeup(options: ListenNotifyOptions = {}): OutboxWakeup {
  checkOptionNames('listenNotifyWakeup', options, LISTEN_NOTIFY_OPTIONS);
  const channel = options.channel ?? DEFAULT_CHANNEL;
  if (!CHANNEL_PATTERN.test(channel)) {
    throw new ConfigurationError(
      `listenNotifyWakeup({ channel }) must be a lower-case identifier of at most 63 characters: letters, digits and _, not starting with a digit (got ${JSON.stringify(channel)})`,
    );
  }
  const coalesceMs = options.notifyCoalesceMs ?? 0;
  if (typeof coalesceMs !== 'number' || !Number.isFinite(coalesceMs) || coalesceMs < 0) {
    throw new ConfigurationError(
      `listenNotifyWakeup({ notifyCoalesceMs }) must be a number of milliseconds ≥ 0, 0 for no coalescing (got ${String(options.notifyCoalesceMs)})`,
    );
  }
  /** The wakeup's own logger, else the first listening outbox's, else the console's. */
  let logger = options.logger ?? consoleLogger;
  const maxFailures = checkMaxFailures('listenNotifyWakeup', options.maxFailures);
  /** Settled by the first `listen()` (from the options, else from its context). */
  let connection: ClientConfig | undefined = options.connection as ClientConfig | undefined;

  const subscription = reconnectingSubscription<PgClient>({
    what: `LISTEN on "${channel}"`,
    failedWarning: `could not LISTEN on "${channel}"; retrying`,
    lostWarning: `LISTEN connection on "${channel}" failed; reconnecting`,
    logger: () => logger,
    maxFailures,
    async connect({ signal, lost }) {
      if (!connection)
        throw new ConfigurationError(
          'listenNotifyWakeup needs a connection: pass listenNotifyWakeup({ connection }) or use it through createOutbox, whose relay passes the outbox database to listen()',
        );
      const { default: pg } = await import('pg').catch((error: unknown) => {
        throw pgNotInstalled(error);
      });
      const c = new pg.Client(connection);
      c.on('notification', (message) => {
        if (message.channel === channel) signal(message.payload ? [message.payload] : []);
      });
      c.on('error', (error) => lost(error));
      try {
        await c.connect();
        await c.query(`LISTEN "${channel}"`);
      } catch (error) {
        c.end().catch(() => {});
        throw error;
      }
      return c;
    },
    async disconnect(c) {
      await c.end();
    },
  });

  return {
    name: 'listen-notify',
    capabilities: {
      notifyInWrite: coalesceMs > 0 ? { channel, coalesceMs } : { channel },
      dialects: LISTEN_NOTIFY_DIALECTS.map((d) => d.name),
    },
    signal() {
      // Sent by PostgreSQL itself on commit: the NOTIFY rides in the write's statement.
    },
    async listen(onSignal, context?: WakeupListenContext) {
      if (!options.logger && context?.logger) logger = context.logger;
      if (context?.connection) {
        const given = context.connection;
        if (!findDialect(given.dialect)?.capabilities.listenNotify) {
          throw new ConfigurationError(
            `listenNotifyWakeup() needs ${listDialects(LISTEN_NOTIFY_DIALECTS, { join: 'or', titles: true })} (the outbox's database is ${given.dialect}); use inProcessWakeup() or none`,
          );
        }
        connection ??= clientConfigOf(given);
      }
      return subscription.listen(onSignal);
    },
    close: () => subscription.close(),
  };
}

/** node-postgres settings for the outbox database's connection settings. */
function clientConfigOf(connection: WakeupConnection): ClientConfig {
  return {
    host: connection.host,
    port: connection.port ?? 5432,
    user: connection.user,
    password: connection.password,
    database: connection.database,
    // A listener sits idle for hours: let TCP notice a peer that vanished.
    keepAlive: true,
  };
}

/**
 * pg is an optional peer dependency (only a PostgreSQL app installs it): when it is the
 * package missing, say how to install it; any other failure is passed on as it is.
 */
function pgNotInstalled(error: unknown): unknown {
  const e = error as NodeJS.ErrnoException;
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !/['"]pg['"]/.test(String(e.message))) return error;
  return new ConfigurationError(
    'listenNotifyWakeup() needs the pg package (node-postgres), which is not installed: run `npm install pg`',
    { cause: error },
  );
}
