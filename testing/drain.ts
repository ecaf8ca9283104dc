import type { DeliveryStatus, Outbox } from '../src/index.js';
import { deliverPending } from '../src/relay/deliver-pending.js';
import { runtimeOf } from '../src/runtime.js';

/** Options of {@link drainOutbox}. */
export interface DrainOptions {
  /** Deliver at most this many rows (one claim); everything owed when omitted. */
  readonly limit?: number;
  /**
   * Honour retry backoffs. Off by default: a failed delivery is scheduled a jittered
   * interval ahead, and a test cannot sit that out, so a drain retries it at once until it
   * succeeds or its budget is spent. Pass `true` to assert the schedule itself.
   * @defaultValue false
   */
  readonly respectBackoff?: boolean;
  /** Read every claim against this moment instead of the clock: moves a test forward. */
  readonly now?: Date;
  /**
   * Deliver only this lane's rows (`'default'`: every row no named lane takes), as
   * `runRelay({ lane })` claims them.
   * @defaultValue null (every lane)
   */
  readonly lane?: string | null;
}

/**
 * Deliver everything owed, from a test, through the production code path.
 *
 * Deliberately not a mock of the relay: it runs the same claim → decode → deliver →
 * acknowledge path, against the same tables, and skips only the waiting. Bypassing that
 * path hides the serialisation boundary and the timing, which is how a suite passes while
 * production breaks.
 *
 * @returns how many outcomes of each status were recorded.
 */
export function drainOutbox(
  outbox: Outbox,
  options: DrainOptions = {},
): Promise<Record<DeliveryStatus, number>> {
  return deliverPending(runtimeOf(outbox), {
    limit: options.limit,
    ignoreBackoff: !options.respectBackoff,
    now: options.now,
    lane: options.lane,
  });
}
