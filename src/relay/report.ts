import type { ResolvedReceiver } from '../declare/define-outbox.js';
import type { DeliveryStatus } from '../declare/types.js';
import { DeliveryError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, Outcome } from '../storage/store.js';
import { deliveryLogFields } from './log-fields.js';

/** A verdict the database accepted, with what it is about. */
export interface RecordedVerdict {
  readonly row: ClaimedDelivery;
  readonly outcome: Outcome;
  /** The declared receiver, when there is one (not for an orphan). */
  readonly receiver: ResolvedReceiver | undefined;
  /** What the receiver threw, for a failure. */
  readonly error?: unknown;
}

/** Tell observers a handler's delivery committed (at once, not at the batch's end). */
export function reportAcknowledged(rt: Runtime, row: ClaimedDelivery): void {
  if (!rt.events.listens('relay:delivered')) return;
  rt.events.emit('relay:delivered', {
    deliveryId: row.id,
    eventId: row.event.uuid,
    receiverKey: row.receiverKey,
    eventName: row.event.name,
    attempt: row.attempts + 1,
    delayMs: rt.clock().getTime() - row.event.recordedAt.getTime(),
  });
}

/**
 * Report the recorded verdicts of a batch: one observer event and log line each, then each
 * failed receiver's `onFailure` (a throwing hook is logged and ignored). Only verdicts the
 * compare-and-set accepted are reported: a verdict refused because the claim was lost
 * never happened. A logged failure carries a {@link DeliveryError} chaining what the
 * receiver threw as its `cause`.
 *
 * @returns the count of verdicts by status.
 */
export async function reportVerdicts(
  rt: Runtime,
  verdicts: readonly RecordedVerdict[],
): Promise<Partial<Record<DeliveryStatus, number>>> {
  const counts: Partial<Record<DeliveryStatus, number>> = {};
  // A batch's successes are told with one clock read (what `delayMs` is measured to), and
  // only when someone listens: a relay without observers builds nothing per delivery.
  const deliveredAt = rt.events.listens('relay:delivered') ? rt.clock().getTime() : undefined;
  let failures = false;
  for (const v of verdicts) {
    const status = v.outcome.status;
    counts[status] = (counts[status] ?? 0) + 1;
    if (status === 'succeeded') {
      if (deliveredAt !== undefined) emitDelivered(rt, v, deliveredAt);
      continue;
    }
    emitVerdict(rt, v);
    if (status === 'failed' || status === 'dead') failures = true;
  }
  if (!failures) return counts;
  for (const v of verdicts) {
    const { outcome, row, receiver } = v;
    if (!receiver?.onFailure || (outcome.status !== 'failed' && outcome.status !== 'dead'))
      continue;
    try {
      await receiver.onFailure({
        receiverKey: receiver.key,
        deliveryId: row.id,
        eventId: row.event.uuid,
        eventName: row.event.name,
        target: row.target,
        // The attempt the receiver was given (a deferral spends none, so its row's count
        // stays where it was, and the next run is given the same number again).
        attempt: row.attempts + 1,
        status: outcome.status,
        error: outcome.lastError ?? '',
      });
    } catch (error) {
      rt.logger.error(`onFailure of ${receiver.key} threw; ignored`, {
        ...deliveryLogFields(row),
        error,
      });
    }
  }
  return counts;
}

/** A recorded success, told to the listeners of `relay:delivered` (`atMs`: the batch's clock read). */
function emitDelivered(rt: Runtime, { row, outcome: o }: RecordedVerdict, atMs: number): void {
  rt.events.emit('relay:delivered', {
    deliveryId: o.id,
    eventId: row.event.uuid,
    receiverKey: row.receiverKey,
    eventName: row.event.name,
    attempt: o.attempts,
    delayMs: atMs - row.event.recordedAt.getTime(),
  });
}

/** A recorded verdict other than a success: its log line and its observer event. */
function emitVerdict(rt: Runtime, { row, outcome: o, error }: RecordedVerdict): void {
  const about = {
    deliveryId: o.id,
    eventId: row.event.uuid,
    receiverKey: row.receiverKey,
    eventName: row.event.name,
  };
  switch (o.status) {
    case 'failed': {
      const deferred = o.attempts === row.attempts;
      const message = deferred
        ? `delivery ${o.id} to ${row.receiverKey} deferred (attempt ${row.attempts + 1} not counted); retrying at ${o.availableAt?.toISOString()}`
        : `delivery ${o.id} to ${row.receiverKey} failed (attempt ${o.attempts} of ${row.maxAttempts}); retrying at ${o.availableAt?.toISOString()}`;
      rt.logger.warn(message, {
        ...deliveryLogFields(row),
        failure: deliveryError(message, o, row, error),
      });
      rt.events.emit('relay:failed', {
        ...about,
        attempt: row.attempts + 1,
        error: o.lastError ?? '',
        nextAttemptAt: o.availableAt!,
      });
      return;
    }
    case 'dead': {
      const message = `delivery ${o.id} to ${row.receiverKey} is dead-lettered after attempt ${row.attempts + 1}`;
      rt.logger.error(message, {
        ...deliveryLogFields(row),
        failure: deliveryError(message, o, row, error),
      });
      rt.events.emit('relay:deadLettered', {
        ...about,
        attempt: row.attempts + 1,
        error: o.lastError ?? '',
      });
      return;
    }
    case 'orphaned':
      rt.logger.warn(
        `delivery ${o.id} names receiver ${row.receiverKey}, which is not declared; recorded orphaned`,
        deliveryLogFields(row),
      );
      rt.events.emit('relay:orphaned', about);
      return;
    case 'pending':
      return; // a NotYet: moved to its time, nothing happened
    case 'succeeded':
      return; // told by emitDelivered
  }
}

/** The {@link DeliveryError} a logged failure carries: the delivery, and the receiver's error as cause. */
function deliveryError(
  message: string,
  o: Outcome,
  row: ClaimedDelivery,
  cause: unknown,
): DeliveryError {
  return new DeliveryError(message, {
    deliveryId: o.id,
    receiverKey: row.receiverKey,
    cause: cause ?? o.lastError ?? undefined,
    retriable: o.status === 'failed',
  });
}
