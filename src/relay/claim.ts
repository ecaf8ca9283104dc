import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, ClaimOptions, ClaimToken } from '../storage/store.js';
import { claimLeaseSeconds } from './claim-lease.js';
import { newClaimToken } from './claim-token.js';

/**
 * What one claim asks for: the store's {@link ClaimOptions} without the token and the
 * lease, which this step mints, and with the worker the token is minted for.
 */
export type ClaimRequest = Omit<ClaimOptions, 'token' | 'leaseUntil'> & {
  readonly workerId: string;
};

/** One claim: its token, its rows, and the lease it stamped. */
export interface Claim {
  readonly token: ClaimToken;
  readonly rows: readonly ClaimedDelivery[];
  /** The lease stamped on every row, in seconds (see {@link claimLeaseSeconds}). */
  readonly leaseSeconds: number;
  /** When the stamped lease lapses. */
  readonly leaseUntil: Date;
}

/**
 * THE claim step, shared by `runRelay`, `deliverPending`, `deliverOne` and `drainOutbox`:
 * a fresh claim token on the real clock, and one claim statement leased from the later of
 * `now` and the real clock (so a test's `now` ahead of the clock never stamps a lease that
 * has already lapsed by the real clock's reckoning, nor one behind it).
 */
export async function claimBatch(rt: Runtime, request: ClaimRequest): Promise<Claim> {
  const token = newClaimToken(request.workerId, rt.clock, rt.state);
  const leaseSeconds = claimLeaseSeconds(rt.config);
  const leaseUntil = new Date(
    Math.max(request.now.getTime(), rt.clock().getTime()) + leaseSeconds * 1000,
  );
  const rows = await rt.store.claim({
    token,
    now: request.now,
    leaseUntil,
    limit: request.limit,
    ignoreBackoff: request.ignoreBackoff,
    excludeIds: request.excludeIds,
    onlyIds: request.onlyIds,
  });
  return { token, rows, leaseSeconds, leaseUntil };
}
