import { type DeliveryStatus, zeroCounts } from '../declare/types.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import { checkWorkerId, claimBatch } from './claim.js';
import { deliverBatch } from './deliver-batch.js';
import { type LaneControl, lanesNotSetAside, servedLanes } from './lanes.js';
import { SchemaRound, servedSchemas } from './relay-schemas.js';
import { checkTopics } from './relay-topics.js';

/** Options of `outbox.deliverPending()`. */
export interface DeliverPendingOptions {
  /** Deliver at most this many rows, in one claim; everything owed when omitted. */
  readonly limit?: number;
  /** Size each claim (not with `limit`). @defaultValue `settings.batchSize` */
  readonly batchSize?: number;
  /**
   * Also claim rows still waiting out a retry backoff. The test harness sets it: a test
   * cannot sit out a jittered hour to observe a retry.
   * @defaultValue false
   */
  readonly ignoreBackoff?: boolean;
  /** The moment every claim is read against, in place of the clock (moves a test forward). */
  readonly now?: Date;
  /** How many deliveries run at once. @defaultValue 1 */
  readonly concurrency?: number;
  /**
   * Deliver only this lane's rows, as `runRelay({ lane })` claims them (`'default'` is
   * every row no named lane takes); `null`, the default here, is every lane — what this
   * did before lanes existed and what `drainOutbox` promises. A lane no receiver declares
   * is refused.
   * @defaultValue null (every lane)
   */
  readonly lane?: string | null;
  /** Lanes to leave out, as `runRelay({ excludeLanes })`. */
  readonly excludeLanes?: readonly string[];
  /** Deliver only these topics' events (names and `prefix*` patterns, as `runRelay`). */
  readonly topics?: readonly string[];
  /** Leave these topics' events out (names and `prefix*` patterns). */
  readonly excludeTopics?: readonly string[];
  /**
   * Names this call on the rows it claims (`claimed_by`), as `runRelay({ workerId })`
   * does: a cron job or a worker of the app's own that wants its claims told apart from a
   * relay's in the rows and the logs. A non-empty string of at most 255 characters.
   * @defaultValue `host:pid:random:pending`
   */
  readonly workerId?: string;
  /** Deliver only these tenants' events (as `runRelay`; `settings.tenancy: 'column'`). */
  readonly tenants?: readonly string[];
  /** Leave these tenants' events out. */
  readonly excludeTenants?: readonly string[];
  /**
   * Deliver what the outboxes of these schemas owe (a schema per tenant, as
   * `runRelay({ schemas })`: claims go round them in turn). Required under
   * `settings.tenancy: 'schema'` (this, or `tenants`); refused on a database without schemas.
   * @defaultValue the outbox's own schema alone
   */
  readonly schemas?: readonly string[];
}

/**
 * Claim and deliver what is owed until nothing is left (or `limit`), through the same
 * claim → decode → deliver → record path the relay runs, and report the outcomes.
 *
 * A row of a `site: 'task'` receiver is handed to the task backend, as the relay hands it,
 * at most once a call, and counted in no status: nothing has happened to it here (also
 * when the backend runs the task inside the hand-off, as a test's inline backend does).
 *
 * A receiver deferring with `RetryAfter(seconds, { counts: false })` sets its lane aside
 * for the rest of the call: the lane's unstarted rows in the batch are handed back rather
 * than attempted, and later claims leave the lane out, while every other lane goes on
 * being delivered.
 */
export async function deliverPending(
  rt: Runtime,
  options: DeliverPendingOptions = {},
): Promise<Record<DeliveryStatus, number>> {
  if (options.limit !== undefined && options.batchSize !== undefined) {
    throw new ConfigurationError(
      'deliverPending() takes limit or batchSize, not both: limit is one claim of exactly that many rows',
      { path: 'limit' },
    );
  }
  if (options.limit !== undefined && (!Number.isInteger(options.limit) || options.limit < 1)) {
    throw new ConfigurationError(
      `deliverPending({ limit }) must be an integer ≥ 1 (got ${options.limit})`,
      { path: 'limit' },
    );
  }
  const lanes = servedLanes(rt.config, 'deliverPending', options.lane, options.excludeLanes, null);
  const topics = checkTopics('deliverPending', 'topics', options.topics);
  const excludeTopics = checkTopics('deliverPending', 'excludeTopics', options.excludeTopics);
  const { targets, tenants, excludeTenants } = servedSchemas(rt, 'deliverPending', options);
  const round = new SchemaRound(targets);
  const counts = zeroCounts();
  const settings = rt.config.settings;
  // The lanes a deferral set aside: left out of every later claim of this call.
  const aside = new Set<string>();
  const lanesControl: LaneControl = {
    setAside: (lane) => aside.has(lane),
    defer: (lane) => void aside.add(lane),
  };
  const workerId =
    options.workerId === undefined
      ? `${rt.processId}:pending`
      : checkWorkerId('deliverPending', options.workerId);
  // With a `now` ahead of the real clock, a row a receiver rescheduled in place (NotYet)
  // would be claimable again at once: such a row is attempted at most once per call (left
  // out of later claims by id; on the real clock none is, see below). A
  // failed row is not excluded: ignoring the backoff, it is retried until it succeeds or
  // its budget is spent, as the reference's drain does.
  // Per schema: row ids are a schema's own.
  const excluded = new Map(targets.map((target) => [target, new Set<string>()]));
  let remaining = options.limit ?? Number.POSITIVE_INFINITY;
  while (remaining > 0) {
    const target = round.take();
    const exclude = excluded.get(target)!;
    const claim = await claimBatch(target, {
      workerId,
      now: options.now ?? rt.clock(),
      limit: Math.min(remaining, options.batchSize ?? settings.batchSize),
      ignoreBackoff: options.ignoreBackoff,
      excludeIds: exclude.size > 0 ? [...exclude] : undefined,
      lanes: lanesNotSetAside(rt.config, lanes, aside),
      topics,
      excludeTopics,
      tenants,
      excludeTenants,
    });
    const rows = claim.rows;
    // An empty claim short of a whole empty round: the next schema's turn.
    if (round.claimed(rows.length)) continue;
    if (rows.length === 0) break;
    const batch = await deliverBatch(target, rows, claim.token, {
      concurrency: options.concurrency ?? 1,
      leaseSeconds: claim.leaseSeconds,
      leaseUntil: claim.leaseUntil,
      lanes: lanesControl,
    });
    for (const [status, n] of Object.entries(batch.counts))
      counts[status as DeliveryStatus] += n ?? 0;
    // On the real clock a rescheduled row is not claimable again until its time has really
    // come, so nothing is excluded and the claim stays the unfiltered one.
    // So is a row handed to the task backend: its lease, extended on the real clock, reads
    // as lapsed at a `now` beyond it, and it is handed off at most once a call.
    if (options.now !== undefined) {
      for (const id of batch.rescheduledIds) exclude.add(id);
      for (const id of batch.handedOffIds) exclude.add(id);
    }
    if (options.limit !== undefined) break;
    remaining -= rows.length;
  }
  return counts;
}
