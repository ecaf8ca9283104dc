import type { Runtime } from '../runtime.js';
import type { ClaimToken, Outcome } from '../storage/store.js';

/** The longest pause between two tries of one record, in milliseconds. */
const MAX_RECORD_WAIT_MS = 2_000;

/** How a batch's record is retried. */
export interface RecordOptions {
  /** When the batch's lease lapses: past it, another worker may have the rows. */
  readonly heldUntil: () => Date;
  /** How to wait between tries (not cut short by a stop: the record is always written). */
  readonly sleep: (ms: number) => Promise<void>;
}

/**
 * Record a batch's outcomes in one statement, a compare-and-set on the claim, trying
 * again with backoff (200 ms doubling to 2 s) for as long as the batch's lease holds: a
 * database that is away for a few seconds then finds every outcome recorded within a
 * pause of its return, instead of the batch's keys frozen until the lease lapses. Past
 * the lease the rows are another worker's to take (at least once), and it gives up.
 *
 * @returns how many rows the compare-and-set changed, or `'unrecorded'` when it gave up.
 */
export async function recordOutcomes(
  rt: Runtime,
  outcomes: readonly Outcome[],
  token: ClaimToken,
  options: RecordOptions,
): Promise<number | 'unrecorded'> {
  if (outcomes.length === 0) return 0;
  for (let attempt = 1; ; attempt++) {
    try {
      return await rt.store.recordOutcomes(outcomes, token);
    } catch (error) {
      rt.events.emit('relay:error', { error, during: 'record' });
      const waitMs = Math.min(100 * 2 ** attempt, MAX_RECORD_WAIT_MS);
      if (rt.clock().getTime() + waitMs >= options.heldUntil().getTime()) {
        rt.logger.error(
          `could not record a batch's outcomes before its lease lapsed (${attempt} tries); the rows will be delivered again`,
          { error },
        );
        return 'unrecorded';
      }
      await options.sleep(waitMs);
    }
  }
}
