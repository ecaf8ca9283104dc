import { EVENT_ID_HEADER, TOPIC_HEADER } from '../transports/message.js';
import { headerText } from './header-value.js';
import { checkMessage, type InboxMessage } from './message.js';
import { headerNames, missingEventId } from './missing-id.js';

/**
 * An AMQP message as amqplib hands it to a `consume` callback or `get` (`ConsumeMessage`,
 * `GetMessage`), typed by the properties read, so reading one needs no amqplib import.
 */
export interface RabbitmqMessageLike {
  readonly properties: {
    readonly messageId?: unknown;
    readonly type?: unknown;
    readonly headers?: Readonly<Record<string, unknown>> | null;
  };
}

/**
 * The inbox message of an AMQP message our `rabbitmq()` transport published: the event id
 * from its `outbox-event-id` header, else its `messageId` property (the transport sets
 * both to the event id, and a shovel or a republishing tool may keep only one); the topic
 * from `outbox-topic`, else the `type` property.
 *
 * ```ts
 * await channel.consume(queue, async (message) => {
 *   if (!message) return;
 *   await orders.handle(fromRabbitmq(message), (transaction) => …);
 *   channel.ack(message); // after the commit: a crash before it redelivers, and the inbox skips
 * });
 * ```
 * @throws {ValidationError} for a message with neither.
 */
export function fromRabbitmq(message: RabbitmqMessageLike): InboxMessage {
  const where = 'fromRabbitmq(message)';
  const p = message?.properties ?? {};
  const headers = p.headers ?? undefined;
  const fromProperty = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const id = headerText(where, headers, EVENT_ID_HEADER) || fromProperty(p.messageId);
  if (id === undefined) {
    throw missingEventId(where, `no messageId property, and ${headerNames(headers)}`);
  }
  const topic = headerText(where, headers, TOPIC_HEADER) || fromProperty(p.type);
  return checkMessage(where, { id, topic: topic ?? null });
}
