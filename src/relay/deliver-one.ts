import type { DeliveryStatus } from '../declare/types.js';
import { ValidationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, ClaimToken } from '../storage/store.js';
import { type Claim, claimBatch, claimedWithColumns } from './claim.js';
import { claimLeaseSeconds, receiverLeaseSeconds } from './claim-lease.js';
import { newClaimToken } from './claim-token.js';
import { deliverBatch } from './deliver-batch.js';

/**
 * The claim a task message carries (a {@link TaskHandOff}'s `claimedBy` and `claimedAt`),
 * for `outbox.deliverOne(id, claim)`: the take under a claim.
 */
export interface DeliverOneOptions {
  /** The worker id of the claim the row was handed off under, exactly as the relay passed it. */
  readonly claimedBy?: string;
  /** When that claim was made: ISO 8601 text exactly as the relay passed it (or a `Date`). */
  readonly claimedAt?: string | Date;
  /**
   * The worker id the row is moved to when taken, named on the row while the task runs.
   * @defaultValue `host:pid:random:task`
   */
  readonly workerId?: string;
}

/**
 * Run one delivery and record its outcome; `null` means this call recorded none.
 *
 * Without a claim, the row is claimed through the relay's own claim, narrowed to this id,
 * so a row that is not owed is refused whoever asks: one already settled (succeeded, dead,
 * orphaned), one waiting out its backoff, one held by a live claim, or one waiting behind
 * an earlier event of its ordering key. Running any of them would repeat committed work,
 * resurrect a dead letter, or break the key's order.
 *
 * With `claimedBy` and `claimedAt` — the claim a task message carries, as the relay handed
 * it to the task backend — it first TAKES the row: one conditional update, committed before
 * anything else runs, that succeeds only while the row is still claimed under exactly that
 * claim and its lease has not lapsed, and moves it to this worker. A second copy of the
 * message, a copy the queue held past its lease, and a copy for a row that has since
 * settled all fail the take and return `null` without running the receiver.
 *
 * Either way the row is then delivered and recorded exactly as the relay does it: a
 * handler's work commits with its acknowledgement; NotYet, RetryAfter, PermanentFailure,
 * the backoff and dead letters are recorded by the relay's own record step; the outbox's
 * `aroundDelivery` hooks, events and metrics see the attempt. A `site: 'task'` row is run
 * here, never handed off again. A deferral (`RetryAfter(…, { counts: false })`) is recorded
 * and pauses nothing: a call made directly holds no batch.
 *
 * @returns the status recorded (`succeeded`, `failed`, `dead`, `orphaned`, or `pending`
 * after a NotYet), or `null` when the row was not owed, the take failed, or the claim was
 * lost before the verdict could be written.
 * @throws {ValidationError} for an id that is not a row id, or a claim given in half or
 * not readable as one.
 */
export async function deliverOne(
  rt: Runtime,
  deliveryId: string,
  options: DeliverOneOptions = {},
): Promise<DeliveryStatus | null> {
  if (typeof deliveryId !== 'string' || !/^\d+$/.test(deliveryId)) {
    throw new ValidationError(
      `deliverOne(id) needs a delivery row id, a string of digits (got ${JSON.stringify(deliveryId)})`,
      { path: 'deliveryId' },
    );
  }
  const from = handOffClaim(options);
  const claim = from
    ? await takeUnderClaim(rt, deliveryId, from, options.workerId)
    : await claimBatch(rt, {
        workerId: options.workerId ?? `${rt.processId}:one`,
        now: rt.clock(),
        limit: 1,
        onlyIds: [deliveryId],
      });
  if (claim.rows.length === 0) return null;
  const batch = await deliverBatch(rt, claim.rows, claim.token, {
    concurrency: 1,
    leaseSeconds: claim.leaseSeconds,
    leaseUntil: claim.leaseUntil,
    runTaskRows: true,
  });
  const recorded = Object.entries(batch.counts).find(([, n]) => (n ?? 0) > 0);
  return recorded ? (recorded[0] as DeliveryStatus) : null;
}

/**
 * The take under a claim: the row moved from the hand-off's claim to a fresh one of this
 * worker, leased as a claim of every lane is (the lease keeper then extends it to its
 * receiver's own lease before it starts, as it does for a relay's row).
 */
async function takeUnderClaim(
  rt: Runtime,
  deliveryId: string,
  from: ClaimToken,
  workerId: string | undefined,
): Promise<Claim> {
  const token = newClaimToken(workerId ?? `${rt.processId}:task`, rt.clock, rt.state);
  const leaseSeconds = takeLeaseSeconds(rt);
  const now = rt.clock();
  const leaseUntil = new Date(now.getTime() + leaseSeconds * 1000);
  const row: ClaimedDelivery | undefined = await rt.store.takeClaim(
    deliveryId,
    from,
    token,
    leaseUntil,
    now,
  );
  const rows =
    row && rt.config.eventColumns.length > 0
      ? await claimedWithColumns(rt, [row], token)
      : row
        ? [row]
        : [];
  return { token, rows, leaseSeconds, leaseUntil };
}

/**
 * The lease a take stamps: the longest of the task receivers' own leases, plus the claim's
 * 10 percent of headroom (at least a claim's lease), so the row is covered for its
 * receiver's whole lease from the take on and the lease keeper has no extension to write
 * before it starts.
 */
function takeLeaseSeconds(rt: Runtime): number {
  let longest = 0;
  for (const r of rt.config.receivers) {
    if (r.mode === 'durable' && r.site === 'task')
      longest = Math.max(longest, receiverLeaseSeconds(rt.config, r));
  }
  return Math.max(claimLeaseSeconds(rt.config), Math.round(longest * 1.1 * 1000) / 1000);
}

/** The hand-off's claim, checked, or undefined when none was given. */
function handOffClaim(options: DeliverOneOptions): ClaimToken | undefined {
  const { claimedBy, claimedAt } = options;
  if (claimedBy === undefined && claimedAt === undefined) return undefined;
  if (typeof claimedBy !== 'string' || claimedBy.length === 0 || claimedAt === undefined) {
    throw new ValidationError(
      `deliverOne(id, { claimedBy, claimedAt }) needs both, exactly as the task backend was handed them (got claimedBy ${JSON.stringify(claimedBy)}, claimedAt ${JSON.stringify(claimedAt)})`,
      { path: claimedBy === undefined ? 'claimedBy' : 'claimedAt' },
    );
  }
  const at = claimedAt instanceof Date ? claimedAt : new Date(claimedAt);
  if (
    Number.isNaN(at.getTime()) ||
    (typeof claimedAt === 'string' && !/^\d{4}-\d\d-\d\dT/.test(claimedAt))
  ) {
    throw new ValidationError(
      `deliverOne(id, { claimedAt }) must be the ISO 8601 time the task backend was handed (got ${JSON.stringify(claimedAt)})`,
      { path: 'claimedAt' },
    );
  }
  return { workerId: claimedBy, claimedAt: at };
}
