/**
 * `outbox.deadLetters(options)`: the dead-lettered deliveries, newest first, with their
 * errors, their receivers and their events — what an operator reads before deciding what
 * to requeue (`requeueDead({ deliveryIds })`) or replay. `outbox dead` prints it.
 */

import type { EventColumnValue } from '../declare/event-columns.js';
import type { Runtime } from '../runtime.js';
import {
  columnsOption,
  eventsOfColumns,
  limitOption,
  receiverKeyOption,
  tenantOption,
} from './arguments.js';

/** Options of {@link Outbox.deadLetters}. */
export interface DeadLettersOptions {
  /** Only this receiver's. @defaultValue every receiver's */
  readonly receiverKey?: string;
  /** At most this many, the newest. @defaultValue 100 */
  readonly limit?: number;
  /** Only this tenant's (`settings.tenancy: 'column'`). @defaultValue every tenant's */
  readonly tenant?: string;
  /**
   * Only those of events whose declared columns hold these values (`{ order_id: 42 }`;
   * every one named must match, `null` for none). @defaultValue every event's
   */
  readonly columns?: Readonly<Record<string, EventColumnValue>>;
}

/** One dead-lettered delivery. */
export interface DeadLetter {
  /** The delivery row's id: what `requeueDead({ deliveryIds })` and `deliverOne` take. */
  readonly deliveryId: string;
  /** The event's id (its UUID): what `replayEvents` and `cancelDeliveries` take. */
  readonly eventId: string;
  /** The event's sequence, its place in the delivery order. */
  readonly eventSequence: string;
  /** The event's name (its topic). */
  readonly eventName: string;
  /** When the event was recorded. */
  readonly recordedAt: Date;
  /** The receiver the delivery was owed to. */
  readonly receiverKey: string;
  /** The fan-out target, or `''`. */
  readonly target: string;
  /** Attempts spent, of `maxAttempts`. */
  readonly attempts: number;
  readonly maxAttempts: number;
  /** The last attempt's error, as recorded. */
  readonly lastError: string | null;
  /** When it was dead-lettered. */
  readonly deadAt: Date | null;
  /** The event's tenant, or `null` (`settings.tenancy: 'column'`). */
  readonly tenant: string | null;
}

/** The default number of dead letters read. */
export const DEFAULT_DEAD_LETTERS_LIMIT = 100;

/** `outbox.deadLetters()`: newest first (by when they died, then by id). */
export async function deadLetters(
  rt: Runtime,
  options: DeadLettersOptions = {},
): Promise<DeadLetter[]> {
  const where = 'deadLetters()';
  const receiverKey = receiverKeyOption(options.receiverKey, where);
  const limit = limitOption(options.limit, where) ?? DEFAULT_DEAD_LETTERS_LIMIT;
  const tenant = tenantOption(rt.config, options.tenant, where);
  const events = await eventsOfColumns(rt, columnsOption(rt.config, options.columns, where));
  const rows = await rt.store.readDeadLetters({
    receiverKey,
    limit,
    tenant,
    ...(events === undefined ? {} : { events }),
  });
  return rows.map((r) => ({
    deliveryId: r.id,
    eventId: r.eventUuid,
    eventSequence: r.eventSequence,
    eventName: r.eventName,
    recordedAt: r.eventRecordedAt,
    receiverKey: r.receiverKey,
    target: r.target,
    attempts: r.attempts,
    maxAttempts: r.maxAttempts,
    lastError: r.lastError,
    deadAt: r.completedAt,
    tenant: r.eventTenant ?? null,
  }));
}
