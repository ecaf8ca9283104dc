/**
 * The RabbitMQ transport (the topic-outbox reference's `RabbitMQDelivery`): persistent
 * messages through an existing exchange on a confirm channel, each item's result the
 * broker's own confirm.
 *
 * Why a confirm channel: a plain `publish` only says the frame was written to a socket; a
 * broker that dies a millisecond later has lost it, and the relay would have recorded it
 * delivered. With publisher confirms an item is `sent` only once the broker acked it (for a
 * persistent message to a durable queue: once it is on disk); a nack, a channel closed by
 * the broker or a connection lost before the ack fails it, and the relay retries it. Each
 * message gets its own confirm callback rather than one `waitForConfirms` per batch, so
 * the result is per item: one nacked message fails alone.
 *
 * The exchange must exist: declaring topology (its type, durability, bindings) is the
 * app's business, and a transport that declared it would fight a differently declared
 * one. It is checked (`checkExchange`) each time a channel opens; a missing exchange fails
 * the batch naming it, and the relay retries until it is declared. The empty name is the
 * default exchange, which routes by queue name.
 */
import type { ChannelModel, ConfirmChannel, Options } from 'amqplib';
import { checkOptionNames, optionNames } from '../../declare/option-keys.js';
import type {
  DeliveryItem,
  DeliveryResult,
  OutboxDelivery,
  OutboxEvent,
} from '../../declare/types.js';
import { ConfigurationError } from '../../errors/outbox-error.js';
import {
  EVENT_ID_HEADER,
  getBody,
  getHeaders,
  getKey,
  ORDERING_KEY_HEADER,
  TOPIC_HEADER,
} from '../message.js';
import { checkAmqpUrl, loadAmqplib, redactUrl } from './load-amqplib.js';

/**
 * The AMQP properties outboxkit gives each message (a subset of amqplib's
 * `Options.Publish`, typed here so the declarations need no `@types/amqplib`).
 */
export interface MessageOptions {
  readonly persistent: boolean;
  readonly contentType: string;
  readonly contentEncoding: string;
  readonly messageId: string;
  readonly type: string;
  readonly timestamp: number;
  readonly headers: Record<string, string>;
  readonly mandatory: boolean;
}

/** Options of {@link rabbitmq}. */
export interface RabbitmqOptions {
  /**
   * The broker, `amqp://user:password@host:5672/vhost` (or `amqps://`). Its password is
   * never written to a log line or an error.
   */
  readonly url: string;
  /**
   * The exchange to publish to. It must already exist (declare it with your topology;
   * a missing one fails every batch, naming it, until it does). `''` is the default
   * exchange, which routes a message to the queue named by its routing key.
   */
  readonly exchange: string;
  /**
   * The routing key: a fixed string, or a function of the event. The event's name by
   * default, so a topic exchange routes `shop.*` or `shop.OrderPlaced` bindings as the
   * topics read.
   * @defaultValue the event's name (its topic)
   */
  readonly routingKey?: string | ((event: OutboxEvent) => string);
  /**
   * Publish as `mandatory`, and fail an item the broker returns as unroutable (no queue
   * bound for its routing key) instead of counting its ack as delivered. Off by default:
   * on a topic exchange a topic nobody subscribes to yet is normal, and RabbitMQ acks an
   * unroutable message (it is dropped). Turn it on when every message must reach a queue.
   * @defaultValue false
   */
  readonly mandatory?: boolean;
  /**
   * How long opening the connection may take, in milliseconds, before the batch fails (and
   * is retried). The attempt's own time limit and a stop end it sooner.
   * @defaultValue 10000
   */
  readonly connectTimeoutMs?: number;
  /** The transport's name in logs and the catalogue. @defaultValue `'rabbitmq'` */
  readonly name?: string;
}

/** One open connection and its confirm channel, replaced whole when either breaks. */
interface Link {
  readonly model: ChannelModel;
  readonly channel: ConfirmChannel;
  /** Message ids the broker returned as unroutable (`mandatory`), until their ack comes. */
  readonly returned: Set<string>;
  /** Why the link broke, once it did: later publishes on it fail with this. */
  broken?: Error;
}

const SENT: DeliveryResult = { status: 'sent' };
const failed = (error: unknown): DeliveryResult => ({ status: 'failed', error });

/** Every option of {@link rabbitmq}, to refuse a misspelt one. */
const RABBITMQ_OPTIONS = optionNames<RabbitmqOptions>()([
  'url',
  'exchange',
  'routingKey',
  'mandatory',
  'connectTimeoutMs',
  'name',
]);

/**
 * A transport publishing each event as a persistent message (`deliveryMode` 2) to
 * `exchange`, with the payload's JSON as its body (`contentType: 'application/json'`), the
 * event id as its `messageId`, its name as `type`, the event's headers plus
 * `outbox-event-id`, `outbox-topic` and `outbox-ordering-key` as its headers, and the
 * event's name as its routing key unless `routingKey` says otherwise.
 *
 * A batch is published on one confirm channel and each item is `sent` once the broker
 * confirms it: a nack, a return (with `mandatory`), a closed channel or a lost connection
 * fails that item, never marks it sent. A closed channel or connection is reopened by the
 * next batch. amqplib is loaded on the first batch (an optional peer dependency).
 *
 * @throws ConfigurationError when the URL, exchange or routing key is not usable.
 * @example
 * ```ts
 * receiver(AnyEvent, { deliver: rabbitmq({ url: 'amqp://localhost', exchange: 'shop' }) })
 * ```
 */
export function rabbitmq(options: RabbitmqOptions): OutboxDelivery {
  checkOptionNames('rabbitmq', options, RABBITMQ_OPTIONS);
  const url = checkAmqpUrl('rabbitmq', options?.url);
  const { exchange, routingKey, mandatory = false, connectTimeoutMs = 10_000 } = options;
  if (typeof exchange !== 'string')
    throw new ConfigurationError(
      `rabbitmq({ exchange }) must be the name of an existing exchange, or '' for the default exchange (got ${typeof exchange})`,
    );
  if (
    routingKey !== undefined &&
    typeof routingKey !== 'string' &&
    typeof routingKey !== 'function'
  )
    throw new ConfigurationError(
      `rabbitmq({ routingKey }) must be a string or a function of the event (got ${typeof routingKey})`,
    );
  if (!Number.isFinite(connectTimeoutMs) || connectTimeoutMs <= 0)
    throw new ConfigurationError(
      `rabbitmq({ connectTimeoutMs }) must be a positive number of milliseconds (got ${connectTimeoutMs})`,
    );
  const where = redactUrl(url);
  const keyOf =
    routingKey === undefined
      ? (event: OutboxEvent) => event.name
      : typeof routingKey === 'string'
        ? () => routingKey
        : routingKey;

  let link: Link | undefined;
  let opening: Promise<Link> | undefined;
  let closed = false;

  /** Mark `l` broken and forget it, so the next batch opens a fresh one. */
  const drop = (l: Link, why: Error) => {
    l.broken ??= why;
    if (link === l) link = undefined;
  };

  const open = async (): Promise<Link> => {
    const amqp = await loadAmqplib('rabbitmq()');
    const model = await amqp.connect(url, { timeout: connectTimeoutMs }).catch((error: unknown) => {
      throw new Error(`could not connect to RabbitMQ at ${where}: ${messageOf(error)}`, {
        cause: error,
      });
    });
    // Without an 'error' listener a lost connection would crash the process; 'close' follows.
    model.on('error', () => {});
    try {
      const channel = await model.createConfirmChannel();
      const l: Link = { model, channel, returned: new Set() };
      // The broker closing the channel says why first (a deleted exchange: 404).
      channel.on('error', (error: Error) =>
        drop(l, new Error(`RabbitMQ closed the channel: ${error.message}`, { cause: error })),
      );
      model.on('error', (error: Error) =>
        drop(l, new Error(`the RabbitMQ connection to ${where} failed: ${error.message}`)),
      );
      channel.on('close', () => {
        drop(l, new Error(`the RabbitMQ channel to ${where} closed`));
        // The connection is this channel's alone: give it back with it.
        model.close().catch(() => {});
      });
      model.on('close', () => drop(l, new Error(`the RabbitMQ connection to ${where} closed`)));
      channel.on('return', (message) => {
        const id = message.properties.messageId;
        if (typeof id === 'string') l.returned.add(id);
      });
      if (exchange !== '')
        await channel.checkExchange(exchange).catch((error: unknown) => {
          throw new Error(
            `the RabbitMQ exchange ${JSON.stringify(exchange)} does not exist at ${where} (rabbitmq() publishes to an existing exchange: declare it): ${messageOf(error)}`,
            { cause: error },
          );
        });
      return l;
    } catch (error) {
      await model.close().catch(() => {});
      throw error;
    }
  };

  /** The open link, or a new one; one opening at a time for concurrent batches. */
  const current = (): Promise<Link> => {
    if (link && !link.broken) return Promise.resolve(link);
    opening ??= open()
      .then((l) => {
        if (closed) {
          l.model.close().catch(() => {});
          throw new Error('the rabbitmq transport was closed');
        }
        link = l;
        return l;
      })
      .finally(() => {
        opening = undefined;
      });
    return opening;
  };

  /** Throw away a link whose confirms may never come (a stalled broker or network). */
  const abandon = (l: Link, why: Error) => {
    drop(l, why);
    const socket = (l.model.connection as unknown as { stream?: { destroy(): void } }).stream;
    socket?.destroy();
  };

  const deliverBatch = async (
    items: readonly DeliveryItem[],
    { signal }: { signal: AbortSignal },
  ): Promise<readonly DeliveryResult[]> => {
    if (signal.aborted) return items.map(() => failed(signal.reason));
    if (closed) return items.map(() => failed(new Error('the rabbitmq transport is closed')));
    const aborted = abortPromise(signal);
    let l: Link;
    try {
      const opened = current();
      const got = await Promise.race([opened, aborted.promise]);
      if (got === ABORTED) {
        aborted.dispose();
        opened.catch(() => {});
        return items.map(() => failed(signal.reason));
      }
      l = got;
    } catch (error) {
      aborted.dispose();
      return items.map(() => failed(error));
    }

    const results: (DeliveryResult | undefined)[] = new Array(items.length);
    // One promise for the batch, settled when its last outstanding confirm arrives once
    // every message is published (a counter, not a promise per message: the confirms are
    // per item all the same). Confirms only ever arrive from the socket, never inside
    // `publish`, so the loop's end sees every message it counted.
    let outstanding = 0;
    let publishing = true;
    let allConfirmed = () => {};
    const confirmed = new Promise<void>((resolve) => {
      allConfirmed = resolve;
    });
    // Each message's callback: the broker's verdict on item `i`, once.
    const confirmOf = (i: number, id: string, key: string) => (error: unknown) => {
      if (results[i] === undefined) {
        const unroutable = l.returned.delete(id);
        results[i] = error
          ? failed(confirmError(error, l))
          : unroutable
            ? failed(
                new Error(
                  `RabbitMQ returned the message as unroutable: no queue is bound to exchange ${JSON.stringify(exchange)} for routing key ${JSON.stringify(key)}`,
                ),
              )
            : SENT;
      }
      if (--outstanding === 0 && !publishing) allConfirmed();
    };
    try {
      for (let i = 0; i < items.length; i++) {
        if (signal.aborted || l.broken) break;
        const { event } = items[i];
        let key: string;
        let body: Buffer;
        let publish: Options.Publish;
        try {
          key = keyOf(event);
          if (typeof key !== 'string')
            throw new Error(`rabbitmq({ routingKey }) returned ${typeof key}, not a string`);
          body = Buffer.from(getBody(event));
          publish = messageOptions(event, mandatory);
        } catch (error) {
          results[i] = failed(error);
          continue;
        }
        let writable = true;
        outstanding++;
        try {
          writable = l.channel.publish(exchange, key, body, publish, confirmOf(i, event.id, key));
        } catch (error) {
          // A channel that closed under us: amqplib throws rather than calling back.
          outstanding--;
          results[i] = failed(l.broken ?? error);
        }
        // The socket's buffer is full: let it drain before writing more of the batch.
        if (!writable) await Promise.race([drained(l), aborted.promise]);
      }
      publishing = false;
      if (outstanding > 0) {
        const outcome = await Promise.race([confirmed, aborted.promise]);
        if (outcome === ABORTED && outstanding > 0)
          abandon(l, new Error('an attempt was aborted while its confirms were outstanding'));
      }
    } finally {
      aborted.dispose();
    }
    return results.map(
      (r) =>
        r ??
        failed(
          signal.aborted
            ? signal.reason
            : (l.broken ?? new Error('the RabbitMQ channel closed before the message was sent')),
        ),
    );
  };

  return {
    name: options.name ?? 'rabbitmq',
    deliverBatch,
    async close() {
      closed = true;
      const l = link ?? (await opening?.catch(() => undefined));
      link = undefined;
      if (!l) return;
      l.broken ??= new Error('the rabbitmq transport was closed');
      // Closing the connection closes its channel; unconfirmed messages fail with it.
      await l.model.close().catch(() => {});
    },
  };
}

/**
 * The AMQP properties of an event's message. Exported for the benchmark's raw loop
 * (bench/rabbitmq.ts), so the limit it measures sends exactly these messages.
 */
export function messageOptions(event: OutboxEvent, mandatory: boolean): MessageOptions {
  const key = getKey(event);
  let headers: Record<string, string>;
  if (isEmpty(event.headers) && !event.tenant)
    // The common case, built in one go: what getHeaders gives for no headers of its own,
    // then the ordering key, in the same order.
    headers =
      key === null
        ? { [EVENT_ID_HEADER]: event.id, [TOPIC_HEADER]: event.name }
        : { [EVENT_ID_HEADER]: event.id, [TOPIC_HEADER]: event.name, [ORDERING_KEY_HEADER]: key };
  else {
    headers = getHeaders(event);
    if (key !== null) headers[ORDERING_KEY_HEADER] = key;
  }
  return {
    persistent: true,
    contentType: 'application/json',
    contentEncoding: 'utf-8',
    messageId: event.id,
    type: event.name,
    timestamp: Math.floor(event.occurredAt.getTime() / 1000),
    headers,
    mandatory,
  };
}

function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

/** Why a message's confirm failed: a nack, or the channel's end before the ack. */
function confirmError(error: unknown, l: Link): Error {
  if (messageOf(error) === 'message nacked')
    return new Error('RabbitMQ nacked the message (it did not take responsibility for it)', {
      cause: error,
    });
  return l.broken ?? (error instanceof Error ? error : new Error(messageOf(error)));
}

const ABORTED = Symbol('aborted');

/** A promise settling to {@link ABORTED} when `signal` aborts, and its disposal. */
function abortPromise(signal: AbortSignal) {
  let onAbort = () => {};
  const promise = new Promise<typeof ABORTED>((resolve) => {
    onAbort = () => resolve(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}

/** Resolves when the channel can take more writes, or has closed. */
function drained(l: Link): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      l.channel.off('drain', done);
      l.channel.off('close', done);
      resolve();
    };
    l.channel.on('drain', done);
    l.channel.on('close', done);
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
