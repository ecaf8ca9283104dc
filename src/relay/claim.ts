import { ConfigurationError } from '../errors/outbox-error.js';
import { withColumns } from '../event-columns/store-io.js';
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, ClaimOptions, ClaimToken } from '../storage/store.js';
import { newClaimToken } from './claim-token.js';
import { type LaneKeyFilter, laneClaimOf } from './lanes.js';

/**
 * What one claim asks for: the store's {@link ClaimOptions} without the token and the
 * lease, which this step mints, and with the worker the token is minted for and the lanes
 * it serves.
 */
export type ClaimRequest = Omit<ClaimOptions, 'token' | 'leaseUntil'> & {
  readonly workerId: string;
  /**
   * Claim only the rows of these lanes (see lanes.ts: a named lane is its receivers' keys,
   * the default lane every other key), under their receivers' lease; every lane when
   * undefined. Empty claims nothing, without asking the database. Combined with
   * `receiverKeys` / `excludeReceiverKeys` given as well, both hold.
   */
  readonly lanes?: readonly string[];
  /** The lease to stamp, in seconds, in place of the claimed lanes' own. */
  readonly leaseSeconds?: number;
};

/** One claim: its token, its rows, and the lease it stamped. */
export interface Claim {
  readonly token: ClaimToken;
  readonly rows: readonly ClaimedDelivery[];
  /** The lease stamped on every row, in seconds (see `claimLeaseSeconds`). */
  readonly leaseSeconds: number;
  /** When the stamped lease lapses. */
  readonly leaseUntil: Date;
}

/**
 * THE claim step, shared by `runRelay`, `deliverPending`, `deliverOne` and `drainOutbox`:
 * a fresh claim token on the real clock, and one claim statement leased from the later of
 * `now` and the real clock (so a test's `now` ahead of the clock never stamps a lease that
 * has already lapsed by the real clock's reckoning, nor one behind it). The lease is the
 * claimed lanes' own (see `claimLeaseSeconds`); it and the lanes' filter are derived
 * from the frozen config once per set of lanes per outbox (see laneClaimOf), not per claim.
 */
export async function claimBatch(rt: Runtime, request: ClaimRequest): Promise<Claim> {
  const token = newClaimToken(request.workerId, rt.clock, rt.state);
  const lanes = laneClaimOf(rt.config, rt.state.laneClaims, request.lanes);
  const leaseSeconds = request.leaseSeconds ?? lanes.leaseSeconds;
  const leaseUntil = new Date(
    Math.max(request.now.getTime(), rt.clock().getTime()) + leaseSeconds * 1000,
  );
  const keys = keyFilter(lanes.keys, request);
  // A filter that admits nothing (every served lane set aside, no topic) claims nothing:
  // there is no statement to send.
  if (
    keys.receiverKeys?.length === 0 ||
    request.topics?.length === 0 ||
    request.tenants?.length === 0 ||
    request.onlyEvents?.length === 0
  ) {
    return { token, rows: [], leaseSeconds, leaseUntil };
  }
  const started = performance.now();
  const claimed = await rt.store.claim({
    token,
    now: request.now,
    leaseUntil,
    limit: request.limit,
    ignoreBackoff: request.ignoreBackoff,
    excludeIds: request.excludeIds,
    onlyIds: request.onlyIds,
    ...keys,
    topics: request.topics,
    excludeTopics: request.excludeTopics,
    tenants: request.tenants,
    excludeTenants: request.excludeTenants,
    onlyEvents: request.onlyEvents,
  });
  // The event's own columns, read apart (never by the claim's statement), only where declared.
  const rows =
    rt.config.eventColumns.length === 0 || claimed.length === 0
      ? claimed
      : await claimedWithColumns(rt, claimed, token);
  // A measurement, not a decision: the monotonic clock, not the runtime's (which tests move).
  rt.events.emit('relay:claimed', { rows: rows.length, durationMs: performance.now() - started });
  return { token, rows, leaseSeconds, leaseUntil };
}

/**
 * The claimed rows with their events' declared columns, read in one statement (a claim's,
 * and a task worker's take of one row); on failure the rows are handed back, then it throws.
 */
export async function claimedWithColumns(
  rt: Runtime,
  rows: readonly ClaimedDelivery[],
  token: ClaimToken,
): Promise<ClaimedDelivery[]> {
  try {
    const events = await withColumns(
      rt,
      rows.map((r) => r.event),
      'the relay',
    );
    return rows.map((r, i) => ({ ...r, event: events[i] }));
  } catch (error) {
    // Not delivered: handed back at once, owed as before, not left to a lease to lapse.
    await rt.store.release(
      rows.map((r) => r.id),
      token,
      rt.clock(),
    );
    throw error;
  }
}

/** The receiver-key filter of a request: its lanes', and its own keys', both holding. */
function keyFilter(
  lane: LaneKeyFilter,
  request: ClaimRequest,
): Pick<ClaimOptions, 'receiverKeys' | 'excludeReceiverKeys'> {
  let receiverKeys = request.receiverKeys ?? lane.receiverKeys;
  if (request.receiverKeys && lane.receiverKeys) {
    const inLane = new Set(lane.receiverKeys);
    receiverKeys = request.receiverKeys.filter((k) => inLane.has(k));
  }
  const excluded = [...(request.excludeReceiverKeys ?? []), ...(lane.excludeReceiverKeys ?? [])];
  return {
    receiverKeys,
    excludeReceiverKeys: excluded.length > 0 ? excluded : undefined,
  };
}

/** The longest worker id the `claimed_by` column holds. */
const MAX_WORKER_ID = 255;

/**
 * Refuse a worker id the claim could not stamp: a non-empty string of at most 255
 * characters (the `claimed_by` column), named in the message with the call.
 *
 * @throws {ConfigurationError} naming the call and the value.
 */
export function checkWorkerId(where: string, workerId: unknown): string {
  if (typeof workerId !== 'string' || workerId.trim() === '' || workerId.length > MAX_WORKER_ID) {
    throw new ConfigurationError(
      `${where}({ workerId }) must be a non-empty string of at most ${MAX_WORKER_ID} characters, which names the worker on the rows it claims (got ${JSON.stringify(workerId)})`,
      { path: 'workerId' },
    );
  }
  return workerId;
}
