export type {
  EventRoute,
  OutboxConfig,
  OutboxConfigInput,
  ResolvedDue,
  ResolvedEvent,
  ResolvedReceiver,
} from './define-outbox.js';
export { DEFAULT_LANE, defineOutbox, isOutboxConfig } from './define-outbox.js';
export type { Duration } from './duration.js';
export type { EventDefinition, EventOptions, PayloadCodecName, Retention } from './event.js';
export { event, isEventDefinition } from './event.js';
export type {
  EventColumnDeclaration,
  EventColumnType,
  EventColumnValue,
  ResolvedEventColumn,
} from './event-columns.js';
export type {
  BackoffOptions,
  CommonReceiverOptions,
  DeliveryReceiverOptions,
  Due,
  EventRef,
  ExecutionSite,
  FiringEvent,
  HandlerReceiverOptions,
  PayloadOf,
  ReceiverDefinition,
  ReceiverOptions,
  Targets,
  TopicPattern,
} from './receiver.js';
export { isReceiverDefinition, receiver } from './receiver.js';
export type { OutboxSettings, ResolvedSettings, Tenancy } from './settings.js';
export { DEFAULT_SETTINGS } from './settings.js';
export type {
  DeliveryCallOptions,
  DeliveryContext,
  DeliveryFailure,
  DeliveryItem,
  DeliveryMode,
  DeliveryResult,
  DeliveryStatus,
  Handler,
  JsonValue,
  OutboxDelivery,
  OutboxEvent,
  PayloadInput,
  PayloadOutput,
} from './types.js';
export { AnyEvent, DELIVERY_STATUSES } from './types.js';
