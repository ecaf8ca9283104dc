import { EVENT_ID_HEADER, TOPIC_HEADER } from '../transports/message.js';
import { type HeaderValue, headerText } from './header-value.js';
import { checkMessage, type InboxMessage } from './message.js';
import { headerNames, missingEventId } from './missing-id.js';

/**
 * A Kafka message as kafkajs hands it to `eachMessage` / `eachBatch` (`KafkaMessage`),
 * typed by its shape so that reading one needs no kafkajs import: headers are bytes or
 * text, a repeated header a list.
 */
export interface KafkaMessageLike {
  readonly key?: Uint8Array | string | null;
  readonly value?: Uint8Array | string | null;
  readonly headers?: Readonly<Record<string, HeaderValue>> | null;
}

/**
 * The inbox message of a Kafka record our `kafka()` transport sent: the event id from its
 * `outbox-event-id` header, the topic from `outbox-topic` (the event's name, which may
 * differ from the Kafka topic it was written to).
 *
 * ```ts
 * await consumer.run({
 *   eachMessage: ({ message }) => orders.handle(fromKafka(message), (transaction) => …),
 * });
 * ```
 * @throws {ValidationError} for a record without the header (or with two different ones).
 */
export function fromKafka(message: KafkaMessageLike): InboxMessage {
  const where = 'fromKafka(message)';
  const headers = message?.headers ?? undefined;
  const id = headerText(where, headers, EVENT_ID_HEADER);
  if (id === undefined || id === '') throw missingEventId(where, headerNames(headers));
  return checkMessage(where, { id, topic: headerText(where, headers, TOPIC_HEADER) ?? null });
}
