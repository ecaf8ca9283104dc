/**
 * The column lists written once: which columns an event row, a delivery row and a recorded
 * outcome write, in which order, with their types and where each value comes from. Each
 * dialect binds them its own way (PostgreSQL one array per column, SQLite a VALUES list
 * or a JSON array), never by a second hand-kept list.
 */
import type { ResolvedEventColumn } from '../../declare/event-columns.js';
import type { DeliveryRowInput, EventRowInput, Outcome } from '../store.js';
import type { RowColumn } from './dialect.js';
import { SQL_TYPE_OF } from './event-columns.js';

/** The columns `insertEvents` writes to the events table, in order. */
export const EVENT_INSERT_COLUMNS: readonly RowColumn<EventRowInput>[] = [
  { name: 'uuid', type: 'uuid', value: (e) => e.uuid },
  { name: 'name', type: 'text', value: (e) => e.name },
  { name: 'version', type: 'integer', value: (e) => e.version },
  { name: 'payload', type: 'json', value: (e) => e.payload },
  { name: 'headers', type: 'json', value: (e) => e.headers },
  { name: 'ordering_key', type: 'text', value: (e) => e.orderingKey },
  { name: 'idempotency_key', type: 'text', value: (e) => e.idempotencyKey },
  { name: 'occurred_at', type: 'timestamp', value: (e) => e.occurredAt },
  { name: 'recorded_at', type: 'timestamp', value: (e) => e.recordedAt },
  { name: 'retention_seconds', type: 'integer', value: (e) => e.retentionSeconds },
  { name: 'delete_when', type: 'text', value: (e) => e.deleteWhen },
  { name: 'actor', type: 'text', value: (e) => e.actor },
  { name: 'correlation_id', type: 'text', value: (e) => e.correlationId },
  { name: 'caused_by', type: 'bigint', value: (e) => e.causedBy },
  { name: 'suppressed_reason', type: 'text', value: (e) => e.suppressedReason },
  { name: 'tenant', type: 'text', value: (e) => e.tenant ?? null },
];

/**
 * The columns an outbox's `insertEvents` writes: {@link EVENT_INSERT_COLUMNS}, then one per
 * column the outbox declares (`defineOutbox({ eventColumns })`, in declaration order: by
 * name), its value the event's `columnValues` entry or NULL. So an event's own columns go
 * into the row in its INSERT, never by a second write of the row (an UPDATE after it wrote
 * the row twice: 1,210 B of PostgreSQL WAL per event against 816 B this way, 798 B with the
 * columns declared but not given, bench/experiments/event-columns-wal.ts). An outbox that declares none gets
 * EVENT_INSERT_COLUMNS itself, so its statements are those of an outbox without the feature,
 * byte for byte. Built once per store: a statement's text is fixed for its store (a
 * PostgreSQL prepared statement is named by it).
 */
export function eventInsertColumns(
  declared: readonly ResolvedEventColumn[],
): readonly RowColumn<EventRowInput>[] {
  if (declared.length === 0) return EVENT_INSERT_COLUMNS;
  return [
    ...EVENT_INSERT_COLUMNS,
    ...declared.map(
      (c): RowColumn<EventRowInput> => ({
        name: c.name,
        type: SQL_TYPE_OF[c.type],
        value: (e) => e.columnValues?.[c.name] ?? null,
      }),
    ),
  ];
}

/**
 * The columns of a delivery row that come from its input, in order. Every dialect adds
 * `event_id` (the written event's sequence) before and `ordering_key` (copied from the
 * event, for the claim's ordering check) after them.
 */
export const DELIVERY_INSERT_COLUMNS: readonly RowColumn<DeliveryRowInput>[] = [
  { name: 'receiver_key', type: 'text', value: (x) => x.receiverKey },
  { name: 'target', type: 'text', value: (x) => x.target },
  { name: 'max_attempts', type: 'integer', value: (x) => x.maxAttempts },
  { name: 'available_at', type: 'timestamp', value: (x) => x.availableAt },
  { name: 'due_at', type: 'timestamp', value: (x) => x.dueAt },
];

/** The columns of one recorded outcome, the `v` of `recordSet` (conditions.ts). */
export const OUTCOME_COLUMNS: readonly RowColumn<Outcome>[] = [
  { name: 'id', type: 'bigint', value: (o) => o.id },
  { name: 'status', type: 'text', value: (o) => o.status },
  { name: 'attempts', type: 'integer', value: (o) => o.attempts },
  { name: 'available_at', type: 'timestamp', value: (o) => o.availableAt },
  { name: 'due_at', type: 'timestamp', value: (o) => o.dueAt ?? null },
  { name: 'last_error', type: 'text', value: (o) => o.lastError },
  { name: 'completed_at', type: 'timestamp', value: (o) => o.completedAt },
];

/** `(a, b, c)`: a column list for INSERT. */
export const columnList = (columns: readonly { readonly name: string }[]): string =>
  columns.map((c) => c.name).join(', ');
