import { type DeliveryStatus, zeroCounts } from '../declare/types.js';
import type { DeliveryRow, StoredEvent } from './store.js';
import { unscopedKey } from './tenant-keys.js';

/** A raw result row, as a driver hands it back. */
export type Row = Record<string, unknown>;

/**
 * The event columns every read of events selects, with stable aliases for
 * {@link toStoredEvent}. `timestamp` may spell a timestamp column differently (the
 * PostgreSQL claim reads them as epoch milliseconds, see `epochMs`).
 */
export const EVENT_COLUMNS = (
  alias: string,
  timestamp: (column: string) => string = (column) => column,
): string =>
  [
    `${alias}.id AS event_sequence`,
    `${alias}.uuid AS event_uuid`,
    `${alias}.name AS event_name`,
    `${alias}.version AS event_version`,
    `${alias}.payload AS event_payload`,
    `${alias}.headers AS event_headers`,
    `${alias}.ordering_key AS event_ordering_key`,
    `${alias}.idempotency_key AS event_idempotency_key`,
    `${timestamp(`${alias}.occurred_at`)} AS event_occurred_at`,
    `${timestamp(`${alias}.recorded_at`)} AS event_recorded_at`,
    `${alias}.actor AS event_actor`,
    `${alias}.correlation_id AS event_correlation_id`,
    `${alias}.caused_by AS event_caused_by`,
    `${alias}.tenant AS event_tenant`,
  ].join(', ');

/** A timestamp column: a Date from PostgreSQL, epoch milliseconds from SQLite. */
export function toDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(Number(value));
}

/** A nullable timestamp column. */
export function toDateOrNull(value: unknown): Date | null {
  return value === null || value === undefined ? null : toDate(value);
}

/** Read the aliased event columns of a row. */
export function toStoredEvent(r: Row): StoredEvent {
  const tenant = (r.event_tenant as string | null) ?? null;
  return {
    sequence: String(r.event_sequence),
    uuid: String(r.event_uuid),
    name: r.event_name as string,
    version: Number(r.event_version),
    payload: r.event_payload,
    headers: r.event_headers,
    orderingKey: unscopedKey(tenant, (r.event_ordering_key as string | null) ?? null),
    idempotencyKey: unscopedKey(tenant, (r.event_idempotency_key as string | null) ?? null),
    occurredAt: toDate(r.event_occurred_at),
    recordedAt: toDate(r.event_recorded_at),
    actor: (r.event_actor as string | null) ?? null,
    correlationId: (r.event_correlation_id as string | null) ?? null,
    causedBy:
      r.event_caused_by === null || r.event_caused_by === undefined
        ? null
        : String(r.event_caused_by),
    tenant,
  };
}

/** Read a `SELECT *` row of the deliveries table. */
export function toDeliveryRow(r: Row): DeliveryRow {
  return {
    id: String(r.id),
    eventSequence: String(r.event_id),
    receiverKey: r.receiver_key as string,
    target: r.target as string,
    status: r.status as DeliveryStatus,
    attempts: Number(r.attempts),
    maxAttempts: Number(r.max_attempts),
    availableAt: toDate(r.available_at),
    dueAt: toDateOrNull(r.due_at),
    claimedBy: (r.claimed_by as string | null) ?? null,
    leaseUntil: toDateOrNull(r.lease_until),
    lastError: (r.last_error as string | null) ?? null,
    completedAt: toDateOrNull(r.completed_at),
    succeededAt: toDateOrNull(r.succeeded_at),
  };
}

/** Turn `(status, n)` rows into a count for every status, zeros included. */
export function countsFrom(rows: Row[]): Record<DeliveryStatus, number> {
  const counts = zeroCounts();
  for (const row of rows) counts[row.status as DeliveryStatus] = Number(row.n);
  return counts;
}
