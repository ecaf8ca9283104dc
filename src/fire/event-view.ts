import type { Transaction } from 'sequelize';
import type { FiringEvent } from '../declare/receiver.js';
import type { DeliveryContext } from '../declare/types.js';
import { unscopedKey } from '../storage/tenant-keys.js';
import type { PreparedEvent } from './types.js';

/**
 * A prepared event as receivers and the planning functions see it, before the store named
 * it: everything but the `sequence`, which the database draws in the write.
 */
export function firingEventOf(p: PreparedEvent): FiringEvent {
  return {
    id: p.row.uuid,
    name: p.row.name,
    version: p.row.version,
    payload: p.payload,
    headers: p.headers,
    orderingKey: unscopedKey(p.row.tenant ?? null, p.row.orderingKey),
    idempotencyKey: unscopedKey(p.row.tenant ?? null, p.row.idempotencyKey),
    occurredAt: p.row.occurredAt,
    recordedAt: p.row.recordedAt,
    actor: p.row.actor,
    correlationId: p.row.correlationId,
    causedBy: p.row.causedBy,
    tenant: p.row.tenant ?? null,
    ...(p.columnView ? { columns: p.columnView } : {}),
  };
}

/**
 * The context of a call with no delivery row behind it: an `inline` or `onCommit` receiver,
 * or a `targets` function deciding the rows. Attempt 1, no target, no due time.
 */
export function rowlessContext(
  receiverKey: string,
  transaction?: Transaction,
  tenant: string | null = null,
): DeliveryContext {
  return {
    receiverKey,
    deliveryId: null,
    attempt: 1,
    target: '',
    dueAt: null,
    transaction,
    tenant,
  };
}
