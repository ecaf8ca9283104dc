/**
 * What every transport sends, in one place, so a Kafka record, a RabbitMQ message, a
 * Redis Streams entry and a webhook request carry the same event the same way (the
 * topic-outbox reference's "Deliveries"), and a custom `OutboxDelivery` can send it too:
 *
 * - the body: the payload's JSON, encoded by the event's codec (a `Date` as ISO text, a
 *   bigint as decimal text; superjson's document for a superjson event), exactly as it is
 *   stored;
 * - the headers: the event's own headers (a trace context among them when tracing is on),
 *   plus `outbox-event-id` (what consumers deduplicate on) and `outbox-topic`, and
 *   `outbox-tenant` for a tenant's event (`settings.tenancy: 'column'`);
 * - the key: the ordering key, so a broker that partitions by key keeps a key's events in
 *   one partition, in order.
 */
import { encodeJson } from '../codec/json.js';
import {
  CODEC_HEADER,
  codecOfHeaders,
  jsonCodec,
  rememberedCodec,
} from '../codec/payload-codec.js';
import type { OutboxEvent } from '../declare/types.js';
import { ConfigurationError } from '../errors/outbox-error.js';

/** The header naming the event's UUIDv7, what consumers deduplicate on. */
export const EVENT_ID_HEADER = 'outbox-event-id';
/** The header naming the event's topic (its declared name). */
export const TOPIC_HEADER = 'outbox-topic';
/**
 * The header carrying the ordering key, for a destination whose messages have no key of
 * their own (a webhook, a RabbitMQ message: routing keys name topics).
 */
export const ORDERING_KEY_HEADER = 'outbox-ordering-key';
/**
 * The header naming a tenant's event's tenant (`settings.tenancy: 'column'`), so a consumer
 * scopes its work as the relay's handlers do with `context.tenant`; absent without one.
 */
export const TENANT_HEADER = 'outbox-tenant';

/**
 * The message body of an event: its payload's JSON, as the outbox stores it — by the codec
 * the event's `outbox-codec` header names (a superjson event's body is superjson's
 * `{ json, meta }` document, and the header travels with it, so a consumer knows to
 * `SuperJSON.deserialize` it; a codec of the app's writes its own document), else the
 * JSON codec.
 *
 * A codec of the app's is the one the outbox fired or decoded the event with (the relay
 * hands transports events it decoded); an event naming one that no outbox declaring it
 * made (one built by hand) is refused rather than sent as JSON.
 *
 * @throws {ConfigurationError} for an event whose header names a codec not known here.
 */
export function getBody(event: OutboxEvent): string {
  const codec = codecOfHeaders(event.headers) ?? rememberedCodec(event.headers);
  if (codec === undefined) {
    throw new ConfigurationError(
      `getBody: event ${event.name} (${event.id}) was written with the codec ${JSON.stringify(event.headers[CODEC_HEADER])}, which is no built-in codec, and no outbox declaring it (defineOutbox({ codecs })) fired or decoded this event; pass the event the outbox handed you`,
    );
  }
  return codec !== jsonCodec
    ? codec.encode(event.payload, 'payload').text
    : encodeJson(event.payload);
}

/**
 * The message headers of an event, as strings (a broker header is text): the event's own
 * headers (a string as is, any other JSON value as its JSON), then `outbox-event-id`,
 * `outbox-topic` and (for a tenant's event) `outbox-tenant`, which always win.
 */
export function getHeaders(event: OutboxEvent): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers)) {
    headers[name] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  headers[EVENT_ID_HEADER] = event.id;
  headers[TOPIC_HEADER] = event.name;
  if (event.tenant) headers[TENANT_HEADER] = event.tenant;
  return headers;
}

/** The message key of an event: its ordering key, or `null` for an event without one. */
export function getKey(event: OutboxEvent): string | null {
  return event.orderingKey;
}
