/**
 * The attribute names of outboxkit's delivery spans. The OpenTelemetry messaging semantic
 * conventions' names where one fits (`messaging.*`, `error.type`), so a backend's messaging
 * views pick the spans up; `outboxkit.*` for what the conventions have no name for.
 */
export const SPAN_ATTRIBUTES = {
  /** Always `'outboxkit'` (semantic conventions: the messaging system). */
  messagingSystem: 'messaging.system',
  /** Always `'deliver'`: the operation, as the span name says it. */
  operationName: 'messaging.operation.name',
  /** `'process'` for a handler (it consumes the event), `'send'` for a transport (it forwards it). */
  operationType: 'messaging.operation.type',
  /** The event's name, which is also its topic (shared by every item, for a batch). */
  destinationName: 'messaging.destination.name',
  /** The event's UUIDv7, what receivers deduplicate on (single deliveries; on each link of a batch). */
  messageId: 'messaging.message.id',
  /** How many deliveries one `deliverBatch` call carried (batches of two or more only). */
  batchCount: 'messaging.batch.message_count',
  /** The class of the first failure (`DeliveryTimeout`, `RetryAfter`, `TypeError`), on a failed span. */
  errorType: 'error.type',
  /** The receiver's key: what to group a receiver's spans by. */
  receiverKey: 'outboxkit.receiver.key',
  /** `'handler'` or `'transport'`. */
  receiverKind: 'outboxkit.receiver.kind',
  /** The delivery row's id. */
  deliveryId: 'outboxkit.delivery.id',
  /** Which attempt of the row this is, counting from one. */
  attempt: 'outboxkit.delivery.attempt',
  /** The fan-out target, for a receiver declared with `targets` (absent when blank). */
  target: 'outboxkit.delivery.target',
  /**
   * What the attempt came to (a `DeliveryOutcome` status: `succeeded`, `failed`, `timedOut`,
   * `retryAfter`, `notYet`, `handedBack`, `lost`), or `mixed` for a batch whose items differ.
   */
  outcome: 'outboxkit.delivery.outcome',
  /** Whether the failure dead-lettered the row (its last attempt, or a `PermanentFailure`). */
  deadLettered: 'outboxkit.delivery.dead_lettered',
} as const;
