import type { Redis as IoRedis } from 'ioredis';
import { checkOptionNames, optionNames } from '../declare/option-keys.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import { consoleLogger, type OutboxLogger } from '../observe/logger.js';
import {
  checkRedisUrl,
  loadIoRedis,
  quitOrDrop,
} from '../transports/redis-streams/load-ioredis.js';
import {
  checkMaxFailures,
  RECONNECT_DEFAULTS,
  reconnectingSubscription,
} from './reconnecting-subscription.js';
import type { OutboxWakeup, WakeupListenContext } from './wakeup.js';

/**
 * What the wakeup needs of a Redis client given to it: `PUBLISH`, and `duplicate()` for
 * the connection it subscribes on (a subscribed connection can run no other command). An
 * ioredis `Redis` is one; typed by shape so `outboxkit`'s types do not need ioredis.
 */
export interface RedisWakeupClient {
  /** Publish `message` on `channel` (ioredis `redis.publish`). */
  publish(channel: string, message: string): Promise<unknown>;
  /** A new connection with the same options, for subscribing (ioredis `redis.duplicate()`). */
  duplicate(override?: Record<string, unknown>): unknown;
}

/** Options of {@link redisWakeup}. Give `url` or `client`, not both. */
export interface RedisWakeupOptions {
  /**
   * Where Redis is (`redis://[:password@]host:port[/db]`). The wakeup opens one connection
   * to publish on (on the first signal) and one per process to subscribe on (on the first
   * `listen()`), and closes both in `close()`.
   */
  readonly url?: string;
  /**
   * An ioredis client of your own: signals are published on it, and the subscribing
   * connection is its `duplicate()` (same server, same settings). It is never closed by
   * `close()`; the duplicate is.
   */
  readonly client?: RedisWakeupClient;
  /**
   * The pub/sub channel. Give each outbox sharing one Redis its own: every relay
   * subscribed to the channel wakes for every signal on it.
   * @defaultValue `'outboxkit'`
   */
  readonly channel?: string;
  /** Where reconnects and failed signals are logged. @defaultValue the listening outbox's logger, else the console logger */
  readonly logger?: OutboxLogger;
  /**
   * How many failed subscriptions in a row (a connect or `SUBSCRIBE` that failed, or a
   * subscribed connection lost) before the wakeup gives up with an ERROR; the relay keeps
   * polling either way, and a later `listen()` after every listener left tries again.
   * @defaultValue 5
   */
  readonly maxFailures?: number;
  /**
   * The first wait before subscribing again after a failure, in milliseconds; each
   * further failure in a row doubles it, up to 15 s.
   * @defaultValue 250
   */
  readonly reconnectBaseMs?: number;
}

/** The channel when none is given. */
const DEFAULT_CHANNEL = 'outboxkit';

/**
 * The ioredis settings of the subscribing connection: no reconnection of ioredis's own
 * (the wakeup reconnects with its own backoff, counts the failures and gives up), no
 * queueing of commands while it is down.
 */
const SUBSCRIBER = {
  lazyConnect: true,
  retryStrategy: () => null,
  enableOfflineQueue: false,
  autoResubscribe: false,
  maxRetriesPerRequest: 0,
  connectionName: 'outboxkit-wakeup',
} as const;

/** The ioredis settings of the publishing connection opened from a `url`. */
const PUBLISHER = {
  maxRetriesPerRequest: 1,
  connectionName: 'outboxkit-wakeup-publisher',
} as const;

/** Every option of {@link redisWakeup}, to refuse a misspelt one. */
const REDIS_WAKEUP_OPTIONS = optionNames<RedisWakeupOptions>()([
  'url',
  'client',
  'channel',
  'logger',
  'maxFailures',
  'reconnectBaseMs',
]);

/**
 * Wake relays through Redis pub/sub. After a transaction that wrote events commits,
 * `fire()` calls `signal(topics)`, which `PUBLISH`es one message on the channel: the JSON
 * list of the transaction's topics (so one per transaction, never for a rollback). Each
 * process's relays share one subscribed connection, and every relay whose topics match
 * polls at once.
 *
 * Pub/sub is fire and forget: a signal published while a relay's connection is down is
 * lost, which is harmless (the relays poll anyway), and once the subscription is back every
 * listener is signalled with no topics, so the relays look at once. A failed subscription
 * is retried with backoff and given up after `maxFailures` in a row with an ERROR, while
 * the relays go on polling. A failed publish is logged as a warning and never thrown.
 *
 * Capabilities: none needed of the database (any dialect); the signal is sent after commit.
 * ioredis is an optional peer dependency, loaded when a connection is first needed.
 *
 * @example
 * ```ts
 * const wakeup = redisWakeup({ url: 'redis://localhost:6379' });
 * const outbox = createOutbox(config, { sequelize, wakeup });
 * ```
 * @throws ConfigurationError when neither or both of `url` and `client` are given, the URL
 *   is not `redis://`/`rediss://`, the channel is empty, or `maxFailures` is not an integer ≥ 1.
 */
export function redisWakeup(options: RedisWakeupOptions): OutboxWakeup {
  checkOptionNames('redisWakeup', options, REDIS_WAKEUP_OPTIONS);
  const who = 'redisWakeup';
  if ((options.url === undefined) === (options.client === undefined)) {
    throw new ConfigurationError(
      `${who}() takes a url or a client, exactly one (got ${options.url === undefined ? 'neither' : 'both'})`,
    );
  }
  const url = options.url === undefined ? undefined : checkRedisUrl(who, options.url);
  const channel = options.channel ?? DEFAULT_CHANNEL;
  if (typeof channel !== 'string' || channel.length === 0) {
    throw new ConfigurationError(
      `${who}({ channel }) must be a non-empty string (got ${JSON.stringify(channel)})`,
    );
  }
  const maxFailures = checkMaxFailures(who, options.maxFailures);
  const reconnectBaseMs = options.reconnectBaseMs ?? RECONNECT_DEFAULTS.baseDelayMs;
  /** The wakeup's own logger, else the first listening outbox's, else the console's. */
  let logger = options.logger ?? consoleLogger;
  let closed = false;
  /** The connection publishing signals; `options.client` when given (not ours to close). */
  let publisher: Promise<RedisWakeupClient> | undefined;
  let ownPublisher: IoRedis | undefined;

  const newConnection = async (settings: Record<string, unknown>): Promise<IoRedis> => {
    if (options.client) return options.client.duplicate(settings) as IoRedis;
    const Redis = await loadIoRedis(`${who}()`);
    return new Redis(url!, settings);
  };

  const subscription = reconnectingSubscription<IoRedis>({
    what: `SUBSCRIBE to Redis channel "${channel}"`,
    failedWarning: `could not SUBSCRIBE to Redis channel "${channel}"; retrying`,
    lostWarning: `Redis wakeup connection on "${channel}" was lost; subscribing again`,
    logger: () => logger,
    maxFailures,
    baseDelayMs: reconnectBaseMs,
    async connect({ signal, lost }) {
      const s = await newConnection(SUBSCRIBER);
      s.on('message', (from: string, message: string) => {
        if (from === channel) signal(topicsOf(message));
      });
      let lastError: Error | undefined;
      s.on('error', (error: Error) => {
        lastError = error;
      });
      s.on('end', () => lost(lastError));
      try {
        await s.connect();
        await s.subscribe(channel);
      } catch (error) {
        s.disconnect();
        throw error;
      }
      return s;
    },
    async disconnect(s) {
      s.disconnect();
    },
  });

  const publishOn = (): Promise<RedisWakeupClient> => {
    if (options.client) return Promise.resolve(options.client);
    publisher ??= newConnection(PUBLISHER).then((p) => {
      // A lost connection shows up as failed publishes, logged below; no console noise.
      p.on('error', () => {});
      ownPublisher = p;
      return p;
    });
    return publisher;
  };

  return {
    name: 'redis',
    capabilities: {},
    signal(topics) {
      if (closed) return;
      const message = JSON.stringify([...topics]);
      publishOn()
        .then((p) => p.publish(channel, message))
        .catch((error: unknown) => {
          logger.warn(`could not PUBLISH a wakeup signal on Redis channel "${channel}"`, {
            error: (error as Error)?.message ?? String(error),
          });
        });
    },
    async listen(onSignal, context?: WakeupListenContext) {
      if (!options.logger && context?.logger) logger = context.logger;
      closed = false;
      return subscription.listen(onSignal);
    },
    async close() {
      closed = true;
      await subscription.close();
      const p = publisher;
      publisher = undefined;
      await p?.catch(() => {});
      const own = ownPublisher;
      ownPublisher = undefined;
      if (own) await quitOrDrop(own);
    },
  };
}

/**
 * The topics a message names: the JSON list of strings `signal()` publishes. Anything
 * else (a hand-sent `PUBLISH outboxkit go`) still wakes the relays, as a signal naming no
 * topic, which every relay reads as "something was written".
 */
function topicsOf(message: string): readonly string[] {
  try {
    const parsed: unknown = JSON.parse(message);
    if (Array.isArray(parsed) && parsed.every((t) => typeof t === 'string')) return parsed;
  } catch {
    // not JSON: a bare ping
  }
  return [];
}
