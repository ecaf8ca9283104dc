/**
 * The consumer inbox: `inbox(sequelize).handle(message, work)` processes each message
 * once however often a broker delivers it, with adapters reading the event id off a
 * Kafka, RabbitMQ, Redis Streams or webhook message, its own migration and a prune.
 */
export type { KafkaMessageLike } from './from-kafka.js';
export { fromKafka } from './from-kafka.js';
export type { RabbitmqMessageLike } from './from-rabbitmq.js';
export { fromRabbitmq } from './from-rabbitmq.js';
export type { RedisStreamEntryLike } from './from-redis-streams.js';
export { fromRedisStreams } from './from-redis-streams.js';
export type { FromWebhookOptions, WebhookHeadersLike } from './from-webhook.js';
export { fromWebhook } from './from-webhook.js';
export type { HandleOptions, InboxResult, InboxWork } from './handle.js';
export type { HeaderValue } from './header-value.js';
export type { Inbox, InboxOptions } from './inbox.js';
export { inbox } from './inbox.js';
export type { InboxMessage } from './message.js';
export type { InboxPruneOptions } from './prune.js';
export type { InboxTableOptions } from './sql-script.js';
export { inboxMigrationSql } from './sql-script.js';
export { verifyWebhookSignature } from './verify-signature.js';
