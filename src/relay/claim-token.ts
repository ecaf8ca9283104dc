import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { RuntimeState } from '../runtime.js';
import type { ClaimToken } from '../storage/store.js';

/** host:pid:random — unique per process, the prefix of its worker ids. */
export function newProcessId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/**
 * A claim token on the real clock, strictly increasing within the outbox instance, so the
 * pair (worker, claimedAt) names exactly one claim: the compare-and-set every settling
 * write makes cannot match a claim that came before or after. Worker ids carry the
 * process id, so two instances never mint the same pair.
 */
export function newClaimToken(
  workerId: string,
  clock: () => Date,
  state: Pick<RuntimeState, 'lastClaimMs'>,
): ClaimToken {
  const now = Math.max(clock().getTime(), state.lastClaimMs + 1);
  state.lastClaimMs = now;
  return { workerId, claimedAt: new Date(now) };
}
