/**
 * outboxkit: the transactional outbox and durable domain events for Sequelize.
 * @packageDocumentation
 * @module outboxkit
 */

export { installCapture } from './capture/index.js';
export type { EncodedJson, JsonSchemaObject, PayloadCodec } from './codec/index.js';
export {
  CODEC_HEADER,
  decodeEvent,
  decodeJson,
  encodeJson,
  encodeJsonValue,
} from './codec/index.js';
export type {
  CapturableModel,
  CaptureDefinition,
  CapturedAttribute,
  CapturedChange,
  CaptureOperation,
  CaptureOptions,
  CapturePayload,
  ChangeExtension,
  ChangeSink,
  ChangeSinkContext,
  JsonForm,
  ResolvedCapture,
} from './declare/capture.js';
export { CAPTURE_OPERATIONS, capture } from './declare/capture.js';
export type {
  BackoffOptions,
  CommonReceiverOptions,
  DeliveryCallOptions,
  DeliveryContext,
  DeliveryFailure,
  DeliveryItem,
  DeliveryMode,
  DeliveryReceiverOptions,
  DeliveryResult,
  DeliveryStatus,
  Due,
  Duration,
  EventColumnDeclaration,
  EventColumnType,
  EventColumnValue,
  EventDefinition,
  EventOptions,
  EventRef,
  EventRoute,
  ExecutionSite,
  FiringEvent,
  Handler,
  HandlerReceiverOptions,
  JsonValue,
  OutboxConfig,
  OutboxConfigInput,
  OutboxDelivery,
  OutboxEvent,
  OutboxSettings,
  PayloadCodecName,
  PayloadInput,
  PayloadOf,
  PayloadOutput,
  ReceiverDefinition,
  ReceiverOptions,
  ResolvedDue,
  ResolvedEvent,
  ResolvedEventColumn,
  ResolvedReceiver,
  ResolvedSettings,
  Retention,
  Targets,
  Tenancy,
  TopicPattern,
} from './declare/index.js';
export {
  AnyEvent,
  DEFAULT_LANE,
  DEFAULT_SETTINGS,
  DELIVERY_STATUSES,
  defineOutbox,
  event,
  isOutboxConfig,
  receiver,
} from './declare/index.js';
export type { OutboxErrorCode, RetryAfterOptions } from './errors/index.js';
export {
  ConfigurationError,
  DeliveryError,
  DeliveryTimeout,
  NotYet,
  OutboxError,
  PayloadDecodeError,
  PayloadUpgradeFailed,
  PermanentFailure,
  RetryAfter,
  ValidationError,
} from './errors/index.js';
export type { FiredEvent, FireManyOptions, FireMessage, FireOptions } from './fire/fire.js';
export type {
  FromWebhookOptions,
  HandleOptions,
  HeaderValue,
  Inbox,
  InboxMessage,
  InboxOptions,
  InboxPruneOptions,
  InboxResult,
  InboxTableOptions,
  InboxWork,
  KafkaMessageLike,
  RabbitmqMessageLike,
  RedisStreamEntryLike,
  WebhookHeadersLike,
} from './inbox/index.js';
export {
  fromKafka,
  fromRabbitmq,
  fromRedisStreams,
  fromWebhook,
  inbox,
  inboxMigrationSql,
  verifyWebhookSignature,
} from './inbox/index.js';
export type {
  Catalogue,
  CatalogueEvent,
  CatalogueEventColumn,
  CatalogueField,
  CatalogueReceiver,
} from './introspect/index.js';
export { buildCatalogue, listensFor, whatListensTo } from './introspect/index.js';
export type {
  AroundDelivery,
  DeliveryAttempt,
  DeliveryOutcome,
  FireHeaders,
  LoggerOptions,
  LogLevel,
  LogStream,
  OutboxEventMap,
  OutboxLogger,
  PinoLikeLogger,
  PinoLogFn,
  PrettyLoggerOptions,
  SerializedError,
} from './observe/index.js';
export {
  consoleLogger,
  isLogLevel,
  jsonLogger,
  pinoLogger,
  prettyLogger,
  silentLogger,
  toOutboxLogger,
} from './observe/index.js';
export type { MetricsOptions, MetricsRegistry } from './observe/metrics/registry.js';
export type { EventIdentity } from './ops/arguments.js';
export type { CancelDeliveriesOptions, CancelResult } from './ops/cancel.js';
export type { CleanupOptions } from './ops/cleanup.js';
export type { DeadLetter, DeadLettersOptions } from './ops/dead-letters.js';
export type { HealthOptions, OutboxHealth, ReceiverBacklog } from './ops/health.js';
export type { PruneBatch, PruneEventsOptions } from './ops/prune.js';
export type { QuietReceiver, QuietReceiversOptions } from './ops/quiet-receivers.js';
export type { ReplayEventsOptions, ReplayResult } from './ops/replay.js';
export type { RequeueDeadOptions } from './ops/requeue.js';
export type {
  CreateOutboxOptions,
  MigrateOptions,
  Outbox,
  TypedFireMessage,
} from './outbox.js';
export { createOutbox } from './outbox.js';
export { backoffSeconds } from './relay/backoff.js';
export type { ClaimBatchOptions, ClaimedBatch } from './relay/claim-for-worker.js';
export type { CoveredSchemasOptions } from './relay/covered-schemas.js';
export type { DeliverOneOptions } from './relay/deliver-one.js';
export type { DeliverPendingOptions } from './relay/deliver-pending.js';
export type { RelayReport, RunRelayOptions } from './relay/run-relay.js';
export type { Scheduler, TimerHandle } from './runtime.js';
export { realScheduler } from './runtime.js';
export type { Attribution, Cause, Scope, SuppressOptions } from './scope/index.js';
export {
  attributed,
  causedBy,
  currentScope,
  propagateScope,
  SCOPE_HEADER_PREFIX,
  suppressed,
  withTenant,
} from './scope/index.js';
export type {
  BullmqTaskBackendOptions,
  BullmqTaskWorkerOptions,
  PgBossTaskBackendOptions,
  PgBossTaskWorkerOptions,
  TaskBackend,
  TaskHandOff,
  TaskWorker,
} from './tasks/index.js';
export {
  bullmqTaskBackend,
  bullmqTaskWorker,
  pgBossTaskBackend,
  pgBossTaskWorker,
} from './tasks/index.js';
export type { BullmqTransportOptions } from './transports/bullmq/index.js';
export { bullmqTransport } from './transports/bullmq/index.js';
export type {
  KafkaClient,
  KafkaOptions,
  KafkaProducer,
  KafkaRecord,
} from './transports/kafka/index.js';
export { kafka, PERMANENT_KAFKA_ERRORS } from './transports/kafka/index.js';
export {
  EVENT_ID_HEADER,
  getBody,
  getHeaders,
  getKey,
  ORDERING_KEY_HEADER,
  TENANT_HEADER,
  TOPIC_HEADER,
} from './transports/message.js';
export type {
  PgBossClient,
  PgBossJob,
  PgBossJobInsert,
  PgBossTransportOptions,
} from './transports/pg-boss/index.js';
export { pgBossTransport } from './transports/pg-boss/index.js';
export type { RabbitmqOptions } from './transports/rabbitmq/index.js';
export { rabbitmq } from './transports/rabbitmq/index.js';
export type {
  RedisStreamMessage,
  RedisStreamsClient,
  RedisStreamsOptions,
  RedisStreamsPipeline,
} from './transports/redis-streams/index.js';
export {
  parseRedisStreamEntry,
  REDIS_STREAM_FIELDS,
  redisStreamFields,
  redisStreams,
} from './transports/redis-streams/index.js';
export type { TaskMessage } from './transports/task-message.js';
export type {
  RouteDestination,
  TopicRouter,
  TopicRouterOptions,
} from './transports/topic-router.js';
export { topicRouter } from './transports/topic-router.js';
export type {
  AllowsAddress,
  ResolvedAddress,
  WebhookCommonOptions,
  WebhookDelivery,
  WebhookLookup,
  WebhookOptions,
  WebhookResult,
  WebhookTarget,
  WebhookTargetOptions,
  WebhookUrlOptions,
} from './transports/webhook/index.js';
export {
  DEFAULT_SIGNATURE_HEADER,
  isPublicAddress,
  isPublicUrl,
  signBody,
  WEBHOOK_RESULT_MAX_LENGTH,
  webhook,
} from './transports/webhook/index.js';
export type {
  InProcessWakeupOptions,
  KafkaWakeupClient,
  KafkaWakeupOptions,
  ListenNotifyOptions,
  OutboxWakeup,
  RabbitmqWakeupOptions,
  RedisWakeupClient,
  RedisWakeupOptions,
  WakeupCapabilities,
  WakeupConnection,
  WakeupListenContext,
} from './wakeups/index.js';
export {
  inProcessWakeup,
  kafkaWakeup,
  listenNotifyWakeup,
  rabbitmqWakeup,
  redisWakeup,
} from './wakeups/index.js';
