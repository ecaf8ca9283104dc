import type { Channel, ChannelModel } from 'amqplib';
import { checkOptionNames, optionNames } from '../declare/option-keys.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import { consoleLogger, type OutboxLogger } from '../observe/logger.js';
import { realScheduler, type Scheduler } from '../runtime.js';
import { checkAmqpUrl, loadAmqplib, redactUrl } from '../transports/rabbitmq/load-amqplib.js';
import { checkMaxFailures, reconnectingSubscription } from './reconnecting-subscription.js';
import type { OutboxWakeup, WakeupListenContext } from './wakeup.js';

/** Options of {@link rabbitmqWakeup}. */
export interface RabbitmqWakeupOptions {
  /** The broker, `amqp://user:password@host:5672/vhost`. Its password never reaches a log line. */
  readonly url: string;
  /**
   * The fanout exchange signals travel on, declared by the wakeup (durable, so it outlives
   * a broker restart). Give each outbox sharing one broker its own.
   * @defaultValue `'outboxkit.wakeup'`
   */
  readonly exchange?: string;
  /** Where reconnects and failures are logged. @defaultValue the listening outbox's logger, else the console logger */
  readonly logger?: OutboxLogger;
  /**
   * How many failed (re)connections in a row before the listener gives up with an ERROR;
   * the relay keeps polling either way.
   * @defaultValue 5
   */
  readonly maxFailures?: number;
  /**
   * The timers of the reconnect backoff. A wakeup is built before `createOutbox`, so it
   * cannot take the outbox's; tests pass a fake one to move time instead of sleeping.
   * @defaultValue Node's timers, unref'd
   */
  readonly scheduler?: Scheduler;
  /** How long opening a connection may take, in milliseconds. @defaultValue 10000 */
  readonly connectTimeoutMs?: number;
}

const DEFAULT_EXCHANGE = 'outboxkit.wakeup';
/** After a failed publisher connection, signals are dropped (the poll covers them) this long. */
const PUBLISH_RETRY_MS = 1_000;

/** A connection and its one channel, given back together. */
interface Link {
  readonly model: ChannelModel;
  readonly channel: Channel;
}

/** Every option of {@link rabbitmqWakeup}, to refuse a misspelt one. */
const RABBITMQ_WAKEUP_OPTIONS = optionNames<RabbitmqWakeupOptions>()([
  'url',
  'exchange',
  'logger',
  'maxFailures',
  'scheduler',
  'connectTimeoutMs',
]);

/**
 * Wake relays through a RabbitMQ fanout exchange. `signal(topics)` — called once per
 * committed transaction, never for a rollback — publishes one message naming the topics
 * (a JSON array); each listening process consumes an exclusive, auto-deleted queue of its
 * own bound to the exchange, so every relay hears every signal and no queue outlives its
 * relay. The poll stays the floor: a signal is a transient, non-persistent message, and
 * one lost (the broker away, a queue not yet bound) only costs a poll interval.
 *
 * A lost listening connection is re-opened with backoff while the relay goes on polling;
 * once it is back every listener is signalled with no topics, since a signal sent while it
 * was down was lost. After `maxFailures` failures in a row it gives up with an ERROR.
 * Publishing opens its own connection on the first signal. amqplib is loaded lazily (an
 * optional peer dependency). Capabilities: any dialect, signals sent after commit.
 *
 * @throws ConfigurationError when the URL or exchange is not usable.
 */
export function rabbitmqWakeup(options: RabbitmqWakeupOptions): OutboxWakeup {
  checkOptionNames('rabbitmqWakeup', options, RABBITMQ_WAKEUP_OPTIONS);
  const url = checkAmqpUrl('rabbitmqWakeup', options?.url);
  const exchange = options.exchange ?? DEFAULT_EXCHANGE;
  if (typeof exchange !== 'string' || exchange.length === 0 || exchange.startsWith('amq.'))
    throw new ConfigurationError(
      `rabbitmqWakeup({ exchange }) must be a non-empty exchange name not starting with "amq." (got ${JSON.stringify(exchange)})`,
    );
  const where = redactUrl(url);
  const scheduler = options.scheduler ?? realScheduler;
  const maxFailures = checkMaxFailures('rabbitmqWakeup', options.maxFailures);
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  let logger = options.logger ?? consoleLogger;
  let closed = false;

  // ---- publishing (signal) -------------------------------------------------------------
  let publisher: Link | undefined;
  let publisherOpening: Promise<Link | undefined> | undefined;
  let publishRetryAt = 0;

  const connect = async (): Promise<Link> => {
    const amqp = await loadAmqplib('rabbitmqWakeup()');
    const model = await amqp.connect(url, { timeout: connectTimeoutMs });
    model.on('error', () => {});
    try {
      const channel = await model.createChannel();
      channel.on('error', () => {});
      // The connection is the channel's alone: a channel closed by the broker ends both.
      channel.on('close', () => void model.close().catch(() => {}));
      await channel.assertExchange(exchange, 'fanout', { durable: true });
      return { model, channel };
    } catch (error) {
      await model.close().catch(() => {});
      throw error;
    }
  };

  const openPublisher = (): Promise<Link | undefined> => {
    publisherOpening ??= connect()
      .then((l) => {
        if (closed) {
          l.model.close().catch(() => {});
          return undefined;
        }
        l.model.on('close', () => {
          if (publisher === l) publisher = undefined;
        });
        publisher = l;
        return l;
      })
      .catch((error: unknown) => {
        publishRetryAt = Date.now() + PUBLISH_RETRY_MS;
        logger.warn(`rabbitmqWakeup could not connect to ${where} to signal; relays poll instead`, {
          error: messageOf(error),
        });
        return undefined;
      })
      .finally(() => {
        publisherOpening = undefined;
      });
    return publisherOpening;
  };

  const publish = (l: Link, topics: readonly string[]) => {
    try {
      l.channel.publish(exchange, '', Buffer.from(JSON.stringify(topics)), {
        contentType: 'application/json',
        persistent: false,
      });
    } catch (error) {
      // The channel closed under us: this signal is lost, the next one reconnects.
      if (publisher === l) publisher = undefined;
      logger.warn('rabbitmqWakeup could not publish a signal; relays poll instead', {
        error: messageOf(error),
      });
    }
  };

  // ---- listening -----------------------------------------------------------------------
  const subscription = reconnectingSubscription<Link>({
    what: `rabbitmqWakeup: consuming from exchange "${exchange}" at ${where}`,
    failedWarning: `rabbitmqWakeup could not consume from exchange "${exchange}"; retrying`,
    lostWarning: `rabbitmqWakeup lost its connection to ${where}; reconnecting`,
    logger: () => logger,
    maxFailures,
    scheduler,
    async connect({ signal, lost }) {
      const l = await connect();
      try {
        const { queue } = await l.channel.assertQueue('', {
          exclusive: true,
          autoDelete: true,
          durable: false,
        });
        await l.channel.bindQueue(queue, exchange, '');
        await l.channel.consume(
          queue,
          (message) => {
            // null: the broker cancelled the consumer (its queue was deleted); start over.
            if (message === null) return void l.model.close().catch(() => {});
            signal(topicsOf(message.content));
          },
          { noAck: true, exclusive: true },
        );
      } catch (error) {
        await l.model.close().catch(() => {});
        throw error;
      }
      l.model.on('close', () => lost());
      return l;
    },
    async disconnect(l) {
      // Closing the connection deletes the exclusive queue with it.
      await l.model.close();
    },
  });

  return {
    name: 'rabbitmq',
    capabilities: {},
    signal(topics) {
      if (closed) return;
      const list = [...topics];
      if (publisher) return publish(publisher, list);
      if (!publisherOpening && Date.now() < publishRetryAt) return;
      void openPublisher().then((l) => {
        if (l) publish(l, list);
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
      const p = publisher ?? (await publisherOpening);
      publisher = undefined;
      await p?.model.close().catch(() => {});
    },
  };
}

/** The topics of a signal message: a JSON array of names; anything else reads as "look". */
function topicsOf(content: Buffer): readonly string[] {
  try {
    const parsed: unknown = JSON.parse(content.toString('utf8'));
    if (Array.isArray(parsed) && parsed.every((t) => typeof t === 'string')) return parsed;
  } catch {
    // fall through: a malformed signal still wakes the relay
  }
  return [];
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
