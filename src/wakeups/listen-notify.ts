import type { ClientConfig, Client as PgClient } from 'pg';
import { ConfigurationError } from '../errors/outbox-error.js';
import { consoleLogger, type OutboxLogger } from '../observe/logger.js';
import { dispatchSignal } from './dispatch.js';
import type { OutboxWakeup, WakeupConnection, WakeupListenContext } from './wakeup.js';

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
  readonly connection?: ClientConfig;
  /** Where reconnect failures are logged. @defaultValue the listening outbox's logger, else the console logger */
  readonly logger?: OutboxLogger;
  /**
   * How many failed (re)connections in a row before the listener gives up with an ERROR;
   * the relay keeps polling either way.
   * @defaultValue 5
   */
  readonly maxFailures?: number;
}

/** The channel when none is given. */
const DEFAULT_CHANNEL = 'outboxkit';
/** A channel is written into `LISTEN "…"` unescaped, so only plain identifiers pass. */
const CHANNEL_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;
/** Reconnect backoff: 500 ms after the first failure, doubling, capped. */
const RECONNECT_BASE_MS = 250;
const RECONNECT_MAX_MS = 15_000;

/**
 * Wake relays through PostgreSQL `LISTEN/NOTIFY`. `fire()` queues a `NOTIFY` (one per
 * topic) inside the same statement that writes the event, so PostgreSQL sends it exactly
 * when the transaction commits and never for a rollback, and folds the repeats of one
 * transaction into one. Each relay holds one dedicated connection that LISTENs; a lost
 * connection is re-opened with backoff while the relay goes on polling, and once it is
 * back every listener is signalled (with no topics), since a NOTIFY sent while it was
 * down was lost.
 *
 * Capabilities: `notifyInWrite` on its channel (so `createOutbox` needs a store that
 * notifies in its write, and `signal()` here does nothing) and `dialects: ['postgres']`.
 * Each signal names one topic: the notification's payload.
 *
 * @throws ConfigurationError when the channel is not a lower-case identifier.
 */
export function listenNotifyWakeup(options: ListenNotifyOptions = {}): OutboxWakeup {
  const channel = options.channel ?? DEFAULT_CHANNEL;
  if (!CHANNEL_PATTERN.test(channel)) {
    throw new ConfigurationError(
      `listenNotifyWakeup({ channel }) must be a lower-case identifier of at most 63 characters: letters, digits and _, not starting with a digit (got ${JSON.stringify(channel)})`,
    );
  }
  /** The wakeup's own logger, else the first listening outbox's, else the console's. */
  let logger = options.logger ?? consoleLogger;
  const maxFailures = options.maxFailures ?? 5;
  /** Settled by the first `listen()` (from the options, else from its context). */
  let connection: ClientConfig | undefined = options.connection;
  const listeners = new Set<(topics: readonly string[]) => void>();
  let client: PgClient | undefined;
  let opening: Promise<void> | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;
  /** A connection was lost since the last one opened: signal everyone once it is back. */
  let lost = false;
  let closed = false;

  const dispatch = (topics: readonly string[]) => dispatchSignal(listeners, topics, logger);

  const scheduleReconnect = () => {
    if (closed || listeners.size === 0 || retryTimer) return;
    failures += 1;
    if (failures > maxFailures) {
      logger.error(
        `LISTEN on "${channel}" failed ${failures} time(s) in a row; giving up (maxFailures: ${maxFailures}), relays keep polling`,
      );
      return;
    }
    const delayMs = Math.min(RECONNECT_MAX_MS, RECONNECT_BASE_MS * 2 ** failures);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void open().catch(() => {});
    }, delayMs);
    // Not on the relay's fake-time path: a plain timer that never keeps the process up.
    retryTimer.unref();
  };

  /** Open the listening client unless one is open or opening. Rejects only on bad config. */
  const open = (): Promise<void> => {
    if (client || closed || listeners.size === 0) return opening ?? Promise.resolve();
    if (opening) return opening;
    opening = (async () => {
      if (!connection)
        throw new ConfigurationError(
          'listenNotifyWakeup needs a connection: pass listenNotifyWakeup({ connection }) or use it through createOutbox, whose relay passes the outbox database to listen()',
        );
      const { default: pg } = await import('pg').catch((error: unknown) => {
        throw pgNotInstalled(error);
      });
      const c = new pg.Client(connection);
      c.on('notification', (message) => {
        if (message.channel === channel && client === c)
          dispatch(message.payload ? [message.payload] : []);
      });
      c.on('error', (error) => {
        if (client !== c) return;
        logger.warn(`LISTEN connection on "${channel}" failed; reconnecting`, {
          error: error.message,
        });
        client = undefined;
        lost = true;
        c.end().catch(() => {});
        scheduleReconnect();
      });
      try {
        await c.connect();
        await c.query(`LISTEN "${channel}"`);
      } catch (error) {
        c.end().catch(() => {});
        // Whatever is written until a LISTEN holds is not heard: signal once it does.
        lost = true;
        logger.warn(`could not LISTEN on "${channel}"; retrying`, {
          error: (error as Error).message,
        });
        scheduleReconnect();
        return;
      }
      // Closed, or the last listener left, while connecting: nobody wants this client.
      if (closed || listeners.size === 0) {
        await c.end().catch(() => {});
        return;
      }
      client = c;
      failures = 0;
      if (lost) {
        lost = false;
        // NOTIFYs sent while the connection was down are gone: have the relays look now.
        dispatch([]);
      }
    })().finally(() => {
      opening = undefined;
    });
    return opening;
  };

  /**
   * Stop the timer and end the client, once closed or the last listener left; awaits a
   * connection being opened (which then ends itself).
   */
  const release = async () => {
    if (retryTimer) clearTimeout(retryTimer);
    retryTimer = undefined;
    failures = 0;
    lost = false;
    await opening?.catch(() => {});
    // A listen() that came while the connection was opening keeps it.
    if (!closed && listeners.size > 0) {
      void open().catch(() => {});
      return;
    }
    const c = client;
    client = undefined;
    await c?.end().catch(() => {});
  };

  return {
    name: 'listen-notify',
    capabilities: { notifyInWrite: { channel }, dialects: ['postgres'] },
    signal() {
      // Sent by PostgreSQL itself on commit: the NOTIFY rides in the write's statement.
    },
    async listen(onSignal, context?: WakeupListenContext) {
      if (!options.logger && context?.logger) logger = context.logger;
      if (context?.connection) {
        const given = context.connection;
        if (given.dialect !== 'postgres') {
          throw new ConfigurationError(
            `listenNotifyWakeup() needs PostgreSQL (the outbox's database is ${given.dialect}); use inProcessWakeup() or none`,
          );
        }
        connection ??= clientConfigOf(given);
      }
      closed = false;
      // A wrapper per call, so one function listening twice is unsubscribed once per call.
      const listener = (topics: readonly string[]) => onSignal(topics);
      listeners.add(listener);
      try {
        await open();
      } catch (error) {
        listeners.delete(listener);
        throw error;
      }
      return async () => {
        if (!listeners.delete(listener)) return;
        // The last listener gone: give the connection back (a later listen() reopens).
        if (listeners.size === 0) await release();
      };
    },
    async close() {
      closed = true;
      listeners.clear();
      await release();
    },
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
