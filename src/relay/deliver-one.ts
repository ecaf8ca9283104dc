import type { DeliveryStatus } from '../declare/types.js';
import type { Runtime } from '../runtime.js';
import { claimBatch } from './claim.js';
import { deliverBatch } from './deliver-batch.js';

/**
 * Run one delivery and record its outcome; `null` means this call recorded none.
 *
 * The row is claimed through the relay's own claim, narrowed to this id, so a row that is
 * not owed is refused whoever asks: one already settled (succeeded, dead, orphaned), one
 * waiting out its backoff, one held by a live claim, or one waiting behind an earlier event
 * of its ordering key. Running any of them would repeat committed work, resurrect a dead
 * letter, or break the key's order. A row claimed here is delivered and recorded exactly as
 * the relay does it (a handler's work commits with its acknowledgement).
 *
 * @returns the status recorded (`succeeded`, `failed`, `dead`, `orphaned`, or `pending`
 * after a NotYet), or `null` when the row was not owed or its claim was lost.
 */
export async function deliverOne(rt: Runtime, deliveryId: string): Promise<DeliveryStatus | null> {
  if (!/^\d+$/.test(deliveryId)) {
    throw new TypeError(
      `deliverOne(id) needs a delivery row id, a string of digits (got ${JSON.stringify(deliveryId)})`,
    );
  }
  const claim = await claimBatch(rt, {
    workerId: `${rt.processId}:one`,
    now: rt.clock(),
    limit: 1,
    onlyIds: [deliveryId],
  });
  if (claim.rows.length === 0) return null;
  const batch = await deliverBatch(rt, claim.rows, claim.token, {
    concurrency: 1,
    leaseSeconds: claim.leaseSeconds,
    leaseUntil: claim.leaseUntil,
  });
  const recorded = Object.entries(batch.counts).find(([, n]) => (n ?? 0) > 0);
  return recorded ? (recorded[0] as DeliveryStatus) : null;
}
