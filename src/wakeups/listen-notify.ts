import type { ClientConfig, Client as PgClient } from 'pg';
import type { Sequelize } from 'sequelize';
import { ConfigurationError } from '../errors/outbox-error.js';
import { consoleLogger, type OutboxLogger } from '../observe/logger.js';
import type { OutboxWakeup } from './wakeup.js';

/** Options of {@link listenNotifyWakeup}. */
export interface ListenNotifyOptions {
  /**
   * The channel to NOTIFY and LISTEN on.
   * @defaultValue `'outboxkit'`
   */
  readonly channel?: string;
  /** How to connect the listening client; defaults to the outbox's Sequelize settings. */
  readonly connection?: ClientConfig;
  /** Where reconnect failures are logged. */
  readonly logger?: OutboxLogger;
  /**
   * How many failed (re)connections in a row before the listener gives up with an ERROR;
   * the relay keeps polling either way.
   * @defaultValue 5
   */
  readonly maxFailures?: number;
}

/** The wakeup with the Sequelize instance it was attached to (internal). */
export interface AttachableWakeup extends OutboxWakeup {
  attach(sequelize: Sequelize): void;
}

/**
 * Wake relays through PostgreSQL `LISTEN/NOTIFY`. `fire()` queues a `NOTIFY` (one per
 * topic) inside the same statement that writes the event, so PostgreSQL sends it exactly
 * when the transaction commits and never for a rollback, and folds the repeats of one
 * transaction into one. Each relay holds one dedicated connection that LISTENs; a lost
 * connection is re-opened with backoff while the relay goes on polling.
 */
export function listenNotifyWakeup(options: ListenNotifyOptions = {}): OutboxWakeup {
  const channel = options.channel ?? 'outboxkit';
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) {
    throw new ConfigurationError(
      `listenNotifyWakeup({ channel }) must be a lower-case identifier (got ${JSON.stringify(channel)})`,
    );
  }
  const logger = options.logger ?? consoleLogger;
  const maxFailures = options.maxFailures ?? 5;
  let connection: ClientConfig | undefined = options.connection;
  const listeners = new Set<(topics: readonly string[]) => void>();
  let client: PgClient | undefined;
  let opening: Promise<void> | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;
  let closed = false;

  const dispatch = (payload: string | undefined) => {
    const topics = payload ? [payload] : [];
    for (const listener of listeners) listener(topics);
  };

  const scheduleReconnect = () => {
    if (closed || listeners.size === 0 || retryTimer) return;
    failures += 1;
    if (failures > maxFailures) {
      logger.error(
        `LISTEN on "${channel}" failed ${maxFailures} times in a row; giving up, relays keep polling`,
      );
      return;
    }
    const delayMs = Math.min(15_000, 250 * 2 ** failures);
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void open();
    }, delayMs);
    retryTimer.unref();
  };

  const open = (): Promise<void> => {
    if (client || opening || closed) return opening ?? Promise.resolve();
    opening = (async () => {
      if (!connection)
        throw new ConfigurationError(
          'listenNotifyWakeup needs a connection: pass { connection } or use it through createOutbox',
        );
      const { default: pg } = await import('pg');
      const c = new pg.Client(connection);
      c.on('notification', (message) => {
        if (message.channel === channel) dispatch(message.payload);
      });
      c.on('error', (error) => {
        logger.warn(`LISTEN connection on "${channel}" failed; reconnecting`, {
          error: error.message,
        });
        if (client === c) client = undefined;
        c.end().catch(() => {});
        scheduleReconnect();
      });
      try {
        await c.connect();
        await c.query(`LISTEN "${channel}"`);
        client = c;
        failures = 0;
      } catch (error) {
        c.end().catch(() => {});
        logger.warn(`could not LISTEN on "${channel}"; retrying`, {
          error: (error as Error).message,
        });
        scheduleReconnect();
      }
    })().finally(() => {
      opening = undefined;
    });
    return opening;
  };

  const wakeup: AttachableWakeup = {
    name: 'listen-notify',
    notifyChannel: channel,
    attach(sequelize) {
      if (sequelize.getDialect() !== 'postgres') {
        throw new ConfigurationError(
          `listenNotifyWakeup() needs PostgreSQL (the outbox's Sequelize uses ${sequelize.getDialect()}); use inProcessWakeup() or none`,
        );
      }
      if (!connection) {
        const c = sequelize.config;
        connection = {
          host: c.host,
          port: Number(c.port) || 5432,
          user: c.username,
          password: c.password ?? undefined,
          database: c.database,
        };
      }
    },
    signal() {
      // Sent by PostgreSQL itself on commit: the NOTIFY rides in the write's statement.
    },
    async listen(onSignal) {
      closed = false;
      listeners.add(onSignal);
      await open();
      return async () => {
        listeners.delete(onSignal);
        if (listeners.size === 0) await wakeup.close();
      };
    },
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = undefined;
      const c = client;
      client = undefined;
      await opening?.catch(() => {});
      await c?.end().catch(() => {});
    },
  };
  return wakeup;
}

/** Whether a wakeup wants to know the Sequelize instance it serves. */
export function isAttachable(wakeup: OutboxWakeup): wakeup is AttachableWakeup {
  return typeof (wakeup as Partial<AttachableWakeup>).attach === 'function';
}
