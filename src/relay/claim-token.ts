import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { ClaimToken } from '../storage/store.js';

let lastClaimMs = 0;

/** host:pid:random — unique per process, the prefix of its worker ids. */
export function newProcessId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/**
 * A claim token on the real clock, strictly increasing within the process, so the pair
 * (worker, claimedAt) names exactly one claim: the compare-and-set every settling write
 * makes cannot match a claim that came before or after.
 */
export function newClaimToken(workerId: string, clock: () => Date): ClaimToken {
  const now = Math.max(clock().getTime(), lastClaimMs + 1);
  lastClaimMs = now;
  return { workerId, claimedAt: new Date(now) };
}
