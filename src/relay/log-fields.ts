/**
 * The structured fields of the relay's per-delivery log lines (failed, deferred,
 * dead-lettered, orphaned, handed back, claim lost): the delivery's identity beside the
 * message, so a log collector filters on `receiver`, `deliveryId`, `eventId` and `attempt`
 * rather than parsing the text. The same names on every such line.
 */
import type { ClaimedDelivery } from '../storage/store.js';

/** Who a per-delivery log line is about. */
export type DeliveryLogFields = {
  /** The receiver's key. */
  readonly receiver: string;
  /** The delivery row's id (as `outbox dead` lists it). */
  readonly deliveryId: string;
  /** The event's id (its UUID). */
  readonly eventId: string;
  /** The event's name. */
  readonly eventName: string;
  /** The fan-out target, where the receiver has targets. */
  readonly target?: string;
  /** The attempt this line is about (1 for the first). */
  readonly attempt: number;
};

/**
 * The fields of a line about `row`'s attempt `attempt` (default: the one it was claimed
 * for, its recorded attempts plus one).
 */
export function deliveryLogFields(
  row: ClaimedDelivery,
  attempt: number = row.attempts + 1,
): DeliveryLogFields {
  return {
    receiver: row.receiverKey,
    deliveryId: row.id,
    eventId: row.event.uuid,
    eventName: row.event.name,
    ...(row.target ? { target: row.target } : {}),
    attempt,
  };
}
