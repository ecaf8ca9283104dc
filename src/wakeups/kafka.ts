import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Consumer, Kafka, Producer } from 'kafkajs';
import { checkOptionNames, optionNames } from '../declare/option-keys.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import { consoleLogger, type OutboxLogger } from '../observe/logger.js';
import type { Scheduler } from '../runtime.js';
import { checkBrokers, isKafkaTopic, loadKafkajs } from '../transports/kafka/load-kafkajs.js';
import { withinMs } from '../transports/promises.js';
import { checkMaxFailures, reconnectingSubscription } from './reconnecting-subscription.js';
import type { OutboxWakeup, WakeupListenContext } from './wakeup.js';

/**
 * What the wakeup needs of a kafkajs `Kafka` client given as `client`: a producer to
 * signal on and a consumer to listen with. Typed by shape, so `outboxkit`'s types do not
 * need kafkajs installed.
 */
export interface KafkaWakeupClient {
  /** A new producer, which sends the wakeup messages (kafkajs `kafka.producer()`). */
  producer(config?: Record<string, unknown>): unknown;
  /** A new consumer in group `groupId`, which receives them (kafkajs `kafka.consumer()`). */
  consumer(config: { groupId: string } & Record<string, unknown>): unknown;
  /**
   * A new admin client (kafkajs `kafka.admin()`), which creates the signals topic
   * (`createTopic`); without it the topic is left to the cluster's auto-creation.
   */
  admin?(config?: Record<string, unknown>): unknown;
}

/** Options of {@link kafkaWakeup}. Give `brokers` or `client`, not both. */
export interface KafkaWakeupOptions {
  /** The bootstrap brokers, `'host:9092'`, `'a:9092,b:9092'` or a list. */
  readonly brokers?: string | readonly string[];
  /**
   * A kafkajs `Kafka` client of your own (TLS, SASL): the wakeup makes its producer and
   * its consumer from it and disconnects them in `close()`; the client stays yours.
   */
  readonly client?: KafkaWakeupClient;
  /**
   * The topic signals travel on. Give each outbox sharing one cluster its own. The wakeup
   * creates it (see `createTopic`).
   * @defaultValue `'outboxkit.wakeup'`
   */
  readonly topic?: string;
  /**
   * Create the signals topic before the first signal or subscription, if it does not
   * exist: ONE partition (a signal needs no parallelism, and one partition keeps a
   * listener's assignment trivial), `replicationFactor`, and `retention.ms` =
   * `retentionMs`, one minute by default (the reference's): a signal is worth nothing a
   * minute later, since relays read from the end and poll anyway. An existing topic is
   * left as it is. A creation the cluster refuses (no CREATE permission, a managed
   * cluster) is logged as a warning once and the topic is left to the cluster's
   * auto-creation (or to you: create it with the settings above). `false` creates nothing.
   * @defaultValue true
   */
  readonly createTopic?: boolean;
  /**
   * How long the created signals topic keeps a signal, in milliseconds (`retention.ms`).
   * @defaultValue 60000
   */
  readonly retentionMs?: number;
  /**
   * The replication factor of the created signals topic; `-1` takes the broker's default
   * (`default.replication.factor`, Kafka 2.4+).
   * @defaultValue 1, as the reference's: a lost signal costs one poll interval
   */
  readonly replicationFactor?: number;
  /** The client id of a client built from `brokers`. @defaultValue `'outboxkit-wakeup'` */
  readonly clientId?: string;
  /**
   * How long the broker may hold an empty fetch, in milliseconds: a real broker answers
   * as soon as a signal arrives, so this only sets how often an idle listener asks (and,
   * on a broker that waits it out, like librdkafka's mock, the latency).
   * @defaultValue 1000
   */
  readonly maxWaitMs?: number;
  /** Where reconnects and failed signals are logged. @defaultValue the listening outbox's logger, else the console logger */
  readonly logger?: OutboxLogger;
  /**
   * On which failed subscription in a row (a consumer that could not join, or crashed)
   * the wakeup gives up with an ERROR; the relay keeps polling either way.
   * @defaultValue 5
   */
  readonly maxFailures?: number;
  /** The reconnect backoff's timers; tests pass a fake one. @defaultValue Node's timers, unref'd */
  readonly scheduler?: Scheduler;
  /**
   * How long a subscription may take to join and make its first fetch, in milliseconds,
   * before the attempt counts as failed (a new consumer group takes seconds to join).
   * @defaultValue 30000
   */
  readonly joinTimeoutMs?: number;
}

const DEFAULT_TOPIC = 'outboxkit.wakeup';
/** How long `close()` waits for kafkajs to disconnect a client before leaving it. */
const CLOSE_WAIT_MS = 2_000;

/** Every option of {@link kafkaWakeup}, to refuse a misspelt one. */
const KAFKA_WAKEUP_OPTIONS = optionNames<KafkaWakeupOptions>()([
  'brokers',
  'client',
  'topic',
  'clientId',
  'maxWaitMs',
  'logger',
  'maxFailures',
  'scheduler',
  'joinTimeoutMs',
  'createTopic',
  'retentionMs',
  'replicationFactor',
]);

/**
 * Wake relays through a Kafka topic of signals. `signal(topics)` — called once per
 * committed transaction, never for a rollback — produces one record naming the topics (a
 * JSON array); each listening process reads the signals topic from its end, so every
 * relay hears every signal and none replays an old one, and every relay whose topics
 * match polls at once.
 *
 * "Outside any consumer group", as the reference reads it, with kafkajs, which has no
 * manual partition assignment: each subscription joins a consumer group of its OWN — a
 * throwaway id (`outboxkit-wakeup.<host>.<pid>.<random>`), new at every (re)connect — so
 * it shares partitions with nobody and is assigned every partition; with no committed
 * offsets (auto-commit off) and `fromBeginning: false` it starts at the end. Nothing is
 * committed, and the empty group left by `close()` is expired by the broker. The cost is
 * the join: a new group takes a few seconds (the broker's initial rebalance delay), paid
 * once per process when it starts listening, and `listen()` resolves only once the
 * consumer has made its first fetch (a signal sent after that is heard). The listeners of
 * one process share one consumer.
 *
 * A consumer that crashes or cannot join is replaced through the one reconnect loop of
 * every wakeup (backoff doubling to 15 s, given up on the 5th failure in a row with an
 * ERROR while the relays poll on); once one holds again every listener is signalled with
 * no topics, since a signal sent meanwhile was missed. A failed signal is logged as a
 * warning, never thrown. kafkajs is loaded lazily (an optional peer dependency).
 * Capabilities: any dialect, signals sent after commit.
 *
 * The signals topic is created before the first signal or subscription (`createTopic`):
 * one partition, `retention.ms` one minute (`retentionMs`), replication factor 1
 * (`replicationFactor`); an existing topic is left alone, and a cluster that refuses the
 * creation leaves it to auto-creation with a warning.
 *
 * @example
 * ```ts
 * const wakeup = kafkaWakeup({ brokers: 'localhost:9092' });
 * const outbox = createOutbox(config, { sequelize, wakeup });
 * ```
 * @throws ConfigurationError when neither or both of `brokers` and `client` are given, a
 *   broker is not `host:port`, the topic is not a legal topic name, `maxFailures` is
 *   not an integer ≥ 1, `retentionMs` not an integer ≥ 1, or `replicationFactor` neither
 *   an integer ≥ 1 nor -1.
 */
export function kafkaWakeup(options: KafkaWakeupOptions): OutboxWakeup {
  checkOptionNames('kafkaWakeup', options, KAFKA_WAKEUP_OPTIONS);
  const who = 'kafkaWakeup';
  if ((options?.brokers === undefined) === (options?.client === undefined))
    throw new ConfigurationError(
      `${who}() takes brokers or a client, exactly one (got ${options?.brokers === undefined ? 'neither' : 'both'})`,
    );
  const brokers = options.brokers === undefined ? undefined : checkBrokers(who, options.brokers);
  const topic = options.topic ?? DEFAULT_TOPIC;
  if (!isKafkaTopic(topic))
    throw new ConfigurationError(
      `${who}({ topic }) must be a topic name (1-249 of a-z A-Z 0-9 . _ -) (got ${JSON.stringify(topic)})`,
    );
  const maxFailures = checkMaxFailures(who, options.maxFailures);
  const retentionMs = options.retentionMs ?? SIGNAL_RETENTION_MS;
  if (!Number.isInteger(retentionMs) || retentionMs < 1)
    throw new ConfigurationError(
      `${who}({ retentionMs }) must be an integer number of milliseconds ≥ 1 (got ${String(options.retentionMs)})`,
    );
  const replicationFactor = options.replicationFactor ?? 1;
  if (!Number.isInteger(replicationFactor) || (replicationFactor < 1 && replicationFactor !== -1))
    throw new ConfigurationError(
      `${who}({ replicationFactor }) must be an integer ≥ 1, or -1 for the broker's default (got ${String(options.replicationFactor)})`,
    );
  const maxWaitMs = options.maxWaitMs ?? 1_000;
  const joinTimeoutMs = options.joinTimeoutMs ?? 30_000;
  let logger = options.logger ?? consoleLogger;
  let closed = false;

  let kafkaClient: Promise<Kafka> | undefined;
  const client = (): Promise<Kafka> => {
    if (options.client) return Promise.resolve(options.client as unknown as Kafka);
    kafkaClient ??= loadKafkajs(`${who}()`).then(
      (kafkajs) =>
        new kafkajs.Kafka({
          clientId: options.clientId ?? 'outboxkit-wakeup',
          brokers: brokers!,
          connectionTimeout: 3_000,
          retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 2_000 },
          // Failures show up as this wakeup's own warnings, once, not as kafkajs's lines.
          logLevel: kafkajs.logLevel.NOTHING,
        }),
    );
    kafkaClient.catch(() => {
      kafkaClient = undefined;
    });
    return kafkaClient;
  };

  // ---- the signals topic ---------------------------------------------------------------
  /** Settled once the topic exists, or once an attempt failed; never rejects. */
  let topicReady: Promise<void> | undefined;
  /** A failed creation is warned of once, and tried again at the next (re)connect. */
  let warned = false;
  const ensureTopic = (): Promise<void> => {
    if (options.createTopic === false) return Promise.resolve();
    topicReady ??= createSignalsTopic(client, { topic, retentionMs, replicationFactor }).then(
      undefined,
      (error: unknown) => {
        topicReady = undefined;
        if (warned) return;
        warned = true;
        logger.warn(
          `kafkaWakeup could not create its signals topic "${topic}" (1 partition, retention.ms=${retentionMs}); leaving it to the cluster's auto-creation — create it yourself where that is off`,
          { error: error instanceof Error ? error.message : String(error) },
        );
      },
    );
    return topicReady;
  };

  // ---- signalling ----------------------------------------------------------------------
  let producer: Promise<Producer> | undefined;
  /** The signals being sent, which `close()` lets finish before it disconnects. */
  const sends = new Set<Promise<void>>();
  const producing = (): Promise<Producer> => {
    producer ??= (async () => {
      const kafkajs = await loadKafkajs(`${who}()`);
      await ensureTopic();
      const p = (await client()).producer({
        allowAutoTopicCreation: true,
        createPartitioner: kafkajs.Partitioners.DefaultPartitioner,
      });
      try {
        await p.connect();
      } catch (error) {
        await p.disconnect().catch(() => {});
        throw error;
      }
      return p;
    })();
    // A producer that could not connect is made afresh for the next signal.
    producer.catch(() => {
      producer = undefined;
    });
    return producer;
  };

  // ---- listening -----------------------------------------------------------------------
  const subscription = reconnectingSubscription<Consumer>({
    what: `kafkaWakeup: reading signals topic "${topic}"`,
    failedWarning: `kafkaWakeup could not read signals topic "${topic}"; retrying`,
    lostWarning: `kafkaWakeup lost its consumer of "${topic}"; reconnecting`,
    logger: () => logger,
    maxFailures,
    scheduler: options.scheduler,
    async connect({ signal, lost }) {
      await ensureTopic();
      const consumer = (await client()).consumer({
        groupId: `outboxkit-wakeup.${hostname()}.${process.pid}.${randomBytes(4).toString('hex')}`,
        maxWaitTimeInMs: maxWaitMs,
        sessionTimeout: 10_000,
        heartbeatInterval: 1_000,
        allowAutoTopicCreation: true,
        // A crash ends this consumer; the shared loop makes the next one, with its backoff.
        retry: { retries: 2, initialRetryTime: 100, restartOnFailure: async () => false },
      });
      let fetched: () => void = () => {};
      const firstFetch = new Promise<void>((resolve) => {
        fetched = resolve;
      });
      const offFetch = consumer.on(consumer.events.FETCH, () => fetched());
      let crashed: (error: unknown) => void = () => {};
      const crash = new Promise<never>((_, reject) => {
        crashed = reject;
      });
      crash.catch(() => {});
      consumer.on(consumer.events.CRASH, (e) => {
        crashed(e.payload.error);
        lost(e.payload.error);
      });
      let timer: NodeJS.Timeout | undefined;
      try {
        await consumer.connect();
        await consumer.subscribe({ topics: [topic], fromBeginning: false });
        await consumer.run({
          autoCommit: false,
          eachMessage: async ({ message }) => signal(topicsOf(message.value)),
        });
        await Promise.race([
          firstFetch,
          crash,
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`no first fetch within ${joinTimeoutMs} ms`)),
              joinTimeoutMs,
            );
          }),
        ]);
      } catch (error) {
        await withinMs(consumer.disconnect(), CLOSE_WAIT_MS);
        throw error;
      } finally {
        clearTimeout(timer);
        offFetch();
      }
      return consumer;
    },
    async disconnect(consumer) {
      await withinMs(consumer.disconnect(), CLOSE_WAIT_MS);
    },
  });

  return {
    name: 'kafka',
    capabilities: {},
    signal(topics) {
      if (closed) return;
      const value = JSON.stringify([...topics]);
      const sending = producing()
        // A send started after close() would connect the producer again, past its disconnect.
        .then((p) => (closed ? undefined : p.send({ topic, acks: 1, messages: [{ value }] })))
        .then(
          () => {},
          (error: unknown) => {
            logger.warn(`kafkaWakeup could not send a signal on "${topic}"; relays poll instead`, {
              error: error instanceof Error ? error.message : String(error),
            });
          },
        )
        .finally(() => sends.delete(sending));
      sends.add(sending);
    },
    async listen(onSignal, context?: WakeupListenContext) {
      if (!options.logger && context?.logger) logger = context.logger;
      closed = false;
      return subscription.listen(onSignal);
    },
    async close() {
      closed = true;
      await subscription.close();
      // The signals in flight first: a producer disconnected mid-send leaves its sockets.
      await withinMs(Promise.all([...sends]), CLOSE_WAIT_MS);
      const p = producer;
      producer = undefined;
      const made = await p?.catch(() => undefined);
      if (made) await withinMs(made.disconnect(), CLOSE_WAIT_MS);
    },
  };
}

/** How long the created signals topic keeps a signal: a minute, as the reference's. */
const SIGNAL_RETENTION_MS = 60_000;

/** What a kafkajs admin client is asked for here. */
interface SignalsAdmin {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  createTopics(request: {
    topics: {
      topic: string;
      numPartitions: number;
      replicationFactor: number;
      configEntries: { name: string; value: string }[];
    }[];
    waitForLeaders: boolean;
  }): Promise<boolean>;
}

/**
 * Create the signals topic (one partition, the retention asked) unless it exists (kafkajs
 * answers `false` then, without an error); nothing for a client without `admin()`.
 */
async function createSignalsTopic(
  client: () => Promise<Kafka>,
  want: { topic: string; retentionMs: number; replicationFactor: number },
): Promise<void> {
  let admin: SignalsAdmin | undefined;
  try {
    const kafka = (await client()) as unknown as KafkaWakeupClient;
    if (typeof kafka.admin !== 'function') return;
    admin = kafka.admin() as SignalsAdmin;
    await admin.connect();
    // false (not an error) when the topic exists already: it is left as it is.
    await admin.createTopics({
      topics: [
        {
          topic: want.topic,
          numPartitions: 1,
          replicationFactor: want.replicationFactor,
          configEntries: [{ name: 'retention.ms', value: String(want.retentionMs) }],
        },
      ],
      waitForLeaders: true,
    });
  } finally {
    await admin?.disconnect().catch(() => {});
  }
}

/** The topics of a signal record: a JSON array of names; anything else reads as "look". */
function topicsOf(value: Buffer | null): readonly string[] {
  if (!value) return [];
  try {
    const parsed: unknown = JSON.parse(value.toString('utf8'));
    if (Array.isArray(parsed) && parsed.every((t) => typeof t === 'string')) return parsed;
  } catch {
    // not JSON: a bare ping still wakes the relays
  }
  return [];
}
