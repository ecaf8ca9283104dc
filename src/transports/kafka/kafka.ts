/**
 * The Kafka transport (the topic-outbox reference's `KafkaDelivery`): each event a record
 * of `topic` (or of the event's own topic, its name), keyed by its ordering key so one
 * key's events stay in one partition, in order; a batch sent as ONE `sendBatch` with
 * `acks: -1` (every in-sync replica has it before it counts as sent).
 *
 * Why one `sendBatch` and per-batch results: kafkajs sends a batch as one produce request
 * per broker and rejects the whole call when any partition's write failed, without saying
 * which records did land. An item is therefore `sent` only when the whole call resolved;
 * a rejected call fails every item of it, and the relay retries them (a record that did
 * land is then sent twice: delivery is at least once, and consumers deduplicate on the
 * `outbox-event-id` header). The relay puts at most one event per ordering key in a
 * batch and sends a key's next event only once this one is recorded, so a retry never
 * reorders a key.
 */

import { checkOptionNames, optionNames } from '../../declare/option-keys.js';
import type {
  DeliveryItem,
  DeliveryResult,
  OutboxDelivery,
  OutboxEvent,
} from '../../declare/types.js';
import { ConfigurationError } from '../../errors/outbox-error.js';
import { PermanentFailure } from '../../errors/signals.js';
import { getBody, getHeaders, getKey } from '../message.js';
import { abortable, withinMs } from '../promises.js';
import { checkBrokers, isKafkaTopic, loadKafkajs } from './load-kafkajs.js';

/** One record as the transport hands it to a producer (kafkajs's `Message`). */
export interface KafkaRecord {
  /** The ordering key; `null` for an event without one (the partitioner spreads those). */
  readonly key: string | null;
  /** The payload's JSON (`getBody`). */
  readonly value: string;
  /** The event's headers plus `outbox-event-id` and `outbox-topic` (`getHeaders`). */
  readonly headers: Record<string, string>;
}

/**
 * What the transport needs of a producer: kafkajs's `Producer` is one. Typed by shape, so
 * `outboxkit`'s types do not need kafkajs installed.
 */
export interface KafkaProducer {
  /** Connect to the brokers; called once, before the first batch. */
  connect(): Promise<void>;
  /** Close the connections; called by the transport's `close()`. */
  disconnect(): Promise<void>;
  /** Send messages to several topics in one request (kafkajs `producer.sendBatch`). */
  sendBatch(batch: {
    topicMessages: { topic: string; messages: KafkaRecord[] }[];
    acks?: number;
    timeout?: number;
  }): Promise<unknown>;
}

/** What the transport needs of a kafkajs `Kafka` client given as `client`: a producer. */
export interface KafkaClient {
  /** A new producer (kafkajs `kafka.producer(config)`). */
  producer(config?: Record<string, unknown>): KafkaProducer;
}

/**
 * Options of {@link kafka}. Give exactly one of `brokers` (the transport builds its own
 * client), `client` (a kafkajs `Kafka` of yours: your TLS, SASL, socket settings; the
 * transport makes its own producer from it) or `producer` (a connected producer of yours,
 * used as it is).
 */
export interface KafkaOptions {
  /** The bootstrap brokers, `'host:9092'`, `'a:9092,b:9092'` or a list. */
  readonly brokers?: string | readonly string[];
  /**
   * A kafkajs `Kafka` client of your own. The transport creates its producer from it on
   * the first batch and disconnects that producer in `close()`; the client stays yours.
   */
  readonly client?: KafkaClient;
  /**
   * A producer of your own, already connected (`await producer.connect()`), with your
   * settings. It is never connected or disconnected by the transport: its lifetime is yours.
   */
  readonly producer?: KafkaProducer;
  /**
   * The topic: a name, or a function of the event (a topic per tenant, per aggregate). The
   * event's topic (its name) by default, as the reference sends it.
   * @defaultValue the event's name (`shop.OrderPlaced`)
   */
  readonly topic?: string | ((event: OutboxEvent) => string);
  /** The client id of a client built from `brokers`. @defaultValue `'outboxkit'` */
  readonly clientId?: string;
  /**
   * How long the broker may take to have every in-sync replica acknowledge a batch, in
   * milliseconds (the produce request's `timeout`); the attempt's own time limit and a
   * stop end the call sooner.
   * @defaultValue 30000
   */
  readonly ackTimeoutMs?: number;
  /** The transport's name in logs and the catalogue. @defaultValue `'kafka'` */
  readonly name?: string;
}

/**
 * The kafkajs error types that say the record itself will never be taken, so retrying it
 * is pointless: such an item fails as a {@link PermanentFailure} (dead-lettered at once,
 * as the reference's permanent failure). Every other error — a broker away, a leader
 * election, an authorisation refused (which an operator fixes) — is retried by the relay.
 * A batch failing with one of these is sent again record by record, so only the guilty
 * record is dead-lettered.
 */
export const PERMANENT_KAFKA_ERRORS: readonly string[] = [
  'MESSAGE_TOO_LARGE',
  'INVALID_RECORD',
  'INVALID_TOPIC_EXCEPTION',
];

/**
 * The kafkajs settings of a client the transport builds from `brokers`: a send to an
 * unreachable broker fails in seconds (the relay records it and retries with its own
 * backoff) rather than kafkajs retrying for half a minute; no log lines of kafkajs's own
 * (a failure shows up as the relay's recorded failure). The producer is not idempotent
 * (a mock or older broker may not support it) and needs none: a batch holds one event per
 * ordering key.
 */
const OWN_CLIENT = {
  connectionTimeout: 3_000,
  requestTimeout: 30_000,
  retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 2_000 },
} as const;

const SENT: DeliveryResult = { status: 'sent' };
const failed = (error: unknown): DeliveryResult => ({ status: 'failed', error });

/** Every option of {@link kafka}, to refuse a misspelt one. */
const KAFKA_OPTIONS = optionNames<KafkaOptions>()([
  'brokers',
  'client',
  'producer',
  'topic',
  'clientId',
  'ackTimeoutMs',
  'name',
]);

/**
 * A transport producing each event as a Kafka record to `topic` (the event's name by
 * default), with the ordering key as its key (one key, one partition, in order), the
 * payload's JSON as its value and the event's headers plus `outbox-event-id` and
 * `outbox-topic` as its headers; a batch as ONE `sendBatch` with `acks: -1`.
 *
 * Results: every item `sent` once the call resolved; a rejected call fails every item of
 * it (retried by the relay); an item whose topic is not a legal Kafka name fails alone
 * before anything is sent; a record the broker will never take ({@link PERMANENT_KAFKA_ERRORS})
 * fails as a `PermanentFailure`. A producer the transport made is connected on the first
 * batch and disconnected in `close()`; a given `producer` is never disconnected. kafkajs
 * is loaded on the first batch (an optional peer dependency).
 *
 * @example
 * ```ts
 * receiver(AnyEvent, { deliver: kafka({ brokers: 'localhost:9092' }) })
 * ```
 * @throws ConfigurationError when not exactly one of `brokers`, `client` and `producer`
 *   is given, a broker is not `host:port`, or `topic` is not a legal topic name or a function.
 */
export function kafka(options: KafkaOptions): OutboxDelivery {
  checkOptionNames('kafka', options, KAFKA_OPTIONS);
  const who = 'kafka';
  const given = (['brokers', 'client', 'producer'] as const).filter(
    (k) => options?.[k] !== undefined,
  );
  if (given.length !== 1)
    throw new ConfigurationError(
      `${who}() takes exactly one of brokers, client and producer (got ${given.length === 0 ? 'none' : given.join(' and ')})`,
    );
  const brokers = options.brokers === undefined ? undefined : checkBrokers(who, options.brokers);
  const { topic, clientId = 'outboxkit', ackTimeoutMs = 30_000 } = options;
  if (topic !== undefined && typeof topic !== 'function' && !isKafkaTopic(topic))
    throw new ConfigurationError(
      `${who}({ topic }) must be a topic name (1-249 of a-z A-Z 0-9 . _ -) or a function of the event (got ${JSON.stringify(topic)})`,
    );
  if (!Number.isFinite(ackTimeoutMs) || ackTimeoutMs <= 0)
    throw new ConfigurationError(
      `${who}({ ackTimeoutMs }) must be a positive number of milliseconds (got ${ackTimeoutMs})`,
    );
  if (options.client !== undefined && typeof options.client.producer !== 'function')
    throw new ConfigurationError(`${who}({ client }) must be a kafkajs Kafka client`);
  if (options.producer !== undefined && typeof options.producer.sendBatch !== 'function')
    throw new ConfigurationError(`${who}({ producer }) must be a kafkajs producer`);

  const topicOf = (event: OutboxEvent): string => {
    const name = typeof topic === 'function' ? topic(event) : (topic ?? event.name);
    if (!isKafkaTopic(name))
      throw new ConfigurationError(
        `${who}({ topic }) gave ${JSON.stringify(name)} for event ${event.id} (${event.name}), which is not a Kafka topic name (1-249 of a-z A-Z 0-9 . _ -)`,
      );
    return name;
  };

  /** The producer the transport made (from `brokers` or `client`): ours to disconnect. */
  let own: KafkaProducer | undefined;
  let connecting: Promise<KafkaProducer> | undefined;
  let closed = false;

  const ownProducer = async (): Promise<KafkaProducer> => {
    let client: KafkaClient | undefined = options.client;
    let producerConfig: Record<string, unknown> = { allowAutoTopicCreation: true };
    if (!client) {
      const kafkajs = await loadKafkajs(`${who}()`);
      client = new kafkajs.Kafka({
        ...OWN_CLIENT,
        clientId,
        brokers: brokers!,
        logLevel: kafkajs.logLevel.NOTHING,
      }) as unknown as KafkaClient;
      producerConfig = {
        ...producerConfig,
        createPartitioner: kafkajs.Partitioners.DefaultPartitioner,
      };
    }
    const p = client.producer({ idempotent: false, ...producerConfig });
    try {
      await p.connect();
    } catch (error) {
      await p.disconnect().catch(() => {});
      throw error;
    }
    if (closed) {
      await p.disconnect().catch(() => {});
      throw closedError();
    }
    own = p;
    return p;
  };

  /** The producer to send on; one connect at a time, tried again after a failure. */
  const producer = (): Promise<KafkaProducer> => {
    if (options.producer) return Promise.resolve(options.producer);
    if (own) return Promise.resolve(own);
    connecting ??= ownProducer().finally(() => {
      connecting = undefined;
    });
    return connecting;
  };

  /** One `sendBatch` of `records`; resolves when every record of it is acknowledged. */
  const send = async (p: KafkaProducer, records: readonly Prepared[], signal: AbortSignal) => {
    const byTopic = new Map<string, KafkaRecord[]>();
    for (const r of records) {
      const list = byTopic.get(r.topic);
      if (list) list.push(r.record);
      else byTopic.set(r.topic, [r.record]);
    }
    await abortable(
      p.sendBatch({
        topicMessages: [...byTopic].map(([t, messages]) => ({ topic: t, messages })),
        acks: -1,
        timeout: ackTimeoutMs,
      }),
      signal,
    );
  };

  return {
    name: options.name ?? 'kafka',
    async deliverBatch(
      items: readonly DeliveryItem[],
      { signal },
    ): Promise<readonly DeliveryResult[]> {
      // Stopping or timed out before anything was sent: send nothing.
      if (signal.aborted) return items.map(() => failed(signal.reason));
      if (closed) return items.map(() => failed(closedError()));
      const results: DeliveryResult[] = new Array(items.length);
      const prepared: Prepared[] = [];
      items.forEach(({ event }, i) => {
        try {
          prepared.push({ index: i, topic: topicOf(event), record: recordOf(event) });
        } catch (error) {
          // An item whose topic cannot be named fails alone; the rest is sent.
          results[i] = failed(error);
        }
      });
      if (prepared.length === 0) return results;
      let p: KafkaProducer;
      try {
        p = await abortable(producer(), signal);
      } catch (error) {
        for (const { index } of prepared) results[index] = failed(error);
        return results;
      }
      try {
        await send(p, prepared, signal);
        for (const { index } of prepared) results[index] = SENT;
      } catch (error) {
        const type = permanentType(error);
        if (type === undefined || prepared.length === 1 || signal.aborted) {
          const outcome = failed(type === undefined ? error : permanent(type, error));
          for (const { index } of prepared) results[index] = outcome;
        } else {
          // One record the broker will never take: find it, sending record by record, so
          // only it is dead-lettered (a batch holds one event per key: no order to keep).
          for (const r of prepared) {
            try {
              await send(p, [r], signal);
              results[r.index] = SENT;
            } catch (one) {
              const t = permanentType(one);
              results[r.index] = failed(t === undefined ? one : permanent(t, one));
            }
          }
        }
      }
      return results;
    },
    async close() {
      closed = true;
      await connecting?.catch(() => {});
      const p = own;
      own = undefined;
      // kafkajs waits for requests in flight; a stalled broker must not hold a closing outbox.
      if (p) await withinMs(p.disconnect(), CLOSE_WAIT_MS);
    },
  };
}

/** An item ready to send: where it goes and what. */
interface Prepared {
  readonly index: number;
  readonly topic: string;
  readonly record: KafkaRecord;
}

/** The record of an event (see {@link KafkaRecord}). */
function recordOf(event: OutboxEvent): KafkaRecord {
  return { key: getKey(event), value: getBody(event), headers: getHeaders(event) };
}

/** The kafkajs error type in `error`'s cause chain that is permanent, if any. */
function permanentType(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string' && PERMANENT_KAFKA_ERRORS.includes(type)) return type;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function permanent(type: string, error: unknown): PermanentFailure {
  return new PermanentFailure(
    `Kafka refused the record for good (${type}): ${error instanceof Error ? error.message : String(error)}`,
    { cause: error },
  );
}

/** How long `close()` waits for the producer to disconnect before leaving it. */
const CLOSE_WAIT_MS = 2_000;

function closedError(): Error {
  return new Error('the kafka transport is closed');
}
