/**
 * `outbox.claimBatch()`: the domain-events reference's `claim_batch`, public, for a worker
 * of the app's own — one that claims rows the way the relay does and runs them elsewhere
 * (a job runner the app already operates, a process per tenant). It is THE claim step
 * (./claim.ts) with its arguments checked, so the rows it takes are leased exactly as a
 * relay's are: a worker that dies without settling them leaves them to be claimed again
 * once the lease lapses, the same path as an ordinary retry, and rows are chosen by
 * `available_at` and the event's sequence, never by a high-water mark of ids.
 *
 * The answer is JSON-safe (ids and the claim as strings), so it can travel through any
 * queue to whoever runs the rows under exactly this claim.
 */
import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import { checkWorkerId, claimBatch } from './claim.js';
import { servedLanes } from './lanes.js';
import { checkTopics } from './relay-topics.js';

/** The most rows one claim takes: the `batchSize` bound. */
const MAX_LIMIT = 10_000;

/** Options of `outbox.claimBatch()`. */
export interface ClaimBatchOptions {
  /**
   * Names the worker on the rows it claims (`claimed_by`): a non-empty string of at most
   * 255 characters. Give each worker its own: the claim (worker, claim time) is what every
   * settling write compares against.
   */
  readonly workerId: string;
  /** Take up to this many rows: an integer from 1 to 10000. */
  readonly limit: number;
  /**
   * How long the claim leases its rows, in seconds: the worker must settle them (or have
   * them settled) before it lapses, or another worker may take them.
   * @defaultValue the claimed lanes' lease (`settings.leaseSeconds`, or the receivers' own)
   */
  readonly leaseSeconds?: number;
  /**
   * The moment the claim is read against — what is due, which backoff has run out, which
   * lease has lapsed — in place of the clock (a test moving forward). The lease is stamped
   * from the later of it and the real clock.
   * @defaultValue the clock
   */
  readonly now?: Date;
  /** Consider only these delivery ids (strings of digits). */
  readonly onlyIds?: readonly string[];
  /** Leave these delivery ids out. */
  readonly excludeIds?: readonly string[];
  /**
   * Also claim rows still waiting out a retry backoff. It never claims a row whose due
   * time (a receiver's `due`) is still ahead of `now`: that is the time the work exists for.
   * @defaultValue false
   */
  readonly ignoreBackoff?: boolean;
  /**
   * Claim only this lane's rows (`'default'`: every row no named lane takes); `null`, the
   * default, is every lane. A lane no receiver declares is refused.
   * @defaultValue null
   */
  readonly lane?: string | null;
  /** Leave these lanes out (each must be declared). */
  readonly excludeLanes?: readonly string[];
  /** Claim only these topics' events (names and `prefix*` patterns). */
  readonly topics?: readonly string[];
  /** Leave these topics' events out (names and `prefix*` patterns). */
  readonly excludeTopics?: readonly string[];
}

/** What `outbox.claimBatch()` took: the claim, and the rows it took under it. */
export interface ClaimedBatch {
  /** The worker the rows are claimed by (`claimed_by`). */
  readonly claimedBy: string;
  /**
   * When they were claimed, as ISO 8601 text (`claimed_at`): with `claimedBy`, the claim a
   * row is settled under. Text rather than a `Date`, so the whole answer is JSON.
   */
  readonly claimedAt: string;
  /** When the lease lapses and the rows become claimable again, as ISO 8601 text. */
  readonly leaseUntil: string;
  /** The delivery ids claimed, oldest event first; empty when nothing was owed. */
  readonly deliveryIds: readonly string[];
}

/**
 * Take ownership of up to `limit` owed deliveries for a worker of the app's own, through
 * the relay's own claim.
 *
 * @throws {ConfigurationError} before anything is claimed: a `workerId` that is no
 * non-empty string of at most 255 characters, a `limit` outside 1..10000, a `leaseSeconds`
 * that is not a number > 0, a `now` that is no valid Date, an id that is no string of
 * digits, an undeclared lane, a bad topic pattern.
 */
export async function claimForWorker(
  rt: Runtime,
  options: ClaimBatchOptions,
): Promise<ClaimedBatch> {
  const where = 'claimBatch';
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError(`${where}({ workerId, limit }) needs its options`, {
      path: 'options',
    });
  }
  const workerId = checkWorkerId(where, options.workerId);
  const { limit, leaseSeconds, now } = options;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw new ConfigurationError(
      `${where}({ limit }) must be an integer from 1 to ${MAX_LIMIT} (got ${String(limit)})`,
      { path: 'limit' },
    );
  }
  if (
    leaseSeconds !== undefined &&
    (typeof leaseSeconds !== 'number' || !Number.isFinite(leaseSeconds) || leaseSeconds <= 0)
  ) {
    throw new ConfigurationError(
      `${where}({ leaseSeconds }) must be a number of seconds > 0 (got ${String(leaseSeconds)})`,
      { path: 'leaseSeconds' },
    );
  }
  if (now !== undefined && (!(now instanceof Date) || Number.isNaN(now.getTime()))) {
    throw new ConfigurationError(`${where}({ now }) must be a valid Date (got ${String(now)})`, {
      path: 'now',
    });
  }
  const onlyIds = checkIds(where, 'onlyIds', options.onlyIds);
  const excludeIds = checkIds(where, 'excludeIds', options.excludeIds);
  const lanes = servedLanes(rt.config, where, options.lane, options.excludeLanes, null);
  const claim = await claimBatch(rt, {
    workerId,
    now: now ?? rt.clock(),
    limit,
    leaseSeconds,
    ignoreBackoff: options.ignoreBackoff === true,
    onlyIds,
    excludeIds: excludeIds?.length ? excludeIds : undefined,
    lanes,
    topics: checkTopics(where, 'topics', options.topics),
    excludeTopics: checkTopics(where, 'excludeTopics', options.excludeTopics),
  });
  return {
    claimedBy: claim.token.workerId,
    claimedAt: claim.token.claimedAt.toISOString(),
    leaseUntil: claim.leaseUntil.toISOString(),
    deliveryIds: claim.rows.map((r) => r.id),
  };
}

function checkIds(
  where: string,
  option: string,
  ids: readonly string[] | undefined,
): readonly string[] | undefined {
  if (ids === undefined) return undefined;
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string' && /^\d+$/.test(id))) {
    throw new ConfigurationError(
      `${where}({ ${option} }) must be an array of delivery row ids, strings of digits (got ${JSON.stringify(ids)})`,
      { path: option },
    );
  }
  return ids;
}
