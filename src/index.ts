/**
 * outboxkit: the transactional outbox and durable domain events for Sequelize.
 * @packageDocumentation
 */

export { decodeEvent, decodeJson, encodeJson } from './codec/index.js';
export { DEFAULT_LANE } from './declare/define-outbox.js';
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
  EventDefinition,
  EventOptions,
  EventRef,
  EventRoute,
  Handler,
  HandlerReceiverOptions,
  JsonValue,
  OutboxConfig,
  OutboxConfigInput,
  OutboxDelivery,
  OutboxEvent,
  OutboxSettings,
  PayloadInput,
  PayloadOf,
  PayloadOutput,
  ReceiverDefinition,
  ReceiverOptions,
  ResolvedEvent,
  ResolvedReceiver,
  ResolvedSettings,
  Retention,
} from './declare/index.js';
export {
  AnyEvent,
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
  PermanentFailure,
  RetryAfter,
  ValidationError,
} from './errors/index.js';
export type { FiredEvent, FireMessage, FireOptions } from './fire/fire.js';
export type {
  Catalogue,
  CatalogueEvent,
  CatalogueField,
  CatalogueReceiver,
} from './introspect/index.js';
export { buildCatalogue, listensFor, whatListensTo } from './introspect/index.js';
export type {
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
export type { CreateOutboxOptions, Outbox, TypedFireMessage } from './outbox.js';
export { createOutbox } from './outbox.js';
export { backoffSeconds } from './relay/backoff.js';
export type { DeliverPendingOptions } from './relay/deliver-pending.js';
export type { RelayReport, RunRelayOptions } from './relay/run-relay.js';
export type { Scheduler, TimerHandle } from './runtime.js';
export { realScheduler } from './runtime.js';
export type {
  InProcessWakeupOptions,
  ListenNotifyOptions,
  OutboxWakeup,
  WakeupCapabilities,
  WakeupConnection,
  WakeupListenContext,
} from './wakeups/index.js';
export { inProcessWakeup, listenNotifyWakeup } from './wakeups/index.js';
