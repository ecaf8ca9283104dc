/**
 * The relay's idle sweep: a relay that finds nothing to claim prunes (`pruneEvents()` with
 * its defaults), so an event declared to be deleted once consumed goes within minutes
 * without a cron line.
 *
 * At most once per `settings.relayPruneSeconds`, the FIRST ONE AN INTERVAL AFTER THE RELAY
 * STARTS rather than at its first idle pass: a relay restarted often, or run for a few
 * passes, then never sweeps at all. The interval is read on a monotonic clock, apart from
 * the claim's wall clock (which a test sets to anything, and an NTP step moves, which
 * would silence or flood the sweep). It advances only when a sweep was attempted, and a
 * failed one counts: it is not retried before the next interval. Every relay sweeps
 * whatever its lane; the prune's re-check at the delete keeps N relays from deleting
 * twice. The stop signal is read between the sweep's batches.
 */
import { pruneEvents } from '../ops/prune.js';
import type { Runtime } from '../runtime.js';

/** Milliseconds on a clock no wall-clock step moves: `performance.now()`. */
export const monotonicMs = (): number => performance.now();

export class IdleSweep {
  #next: number;
  readonly #intervalMs: number;

  private constructor(
    private readonly rt: Runtime,
    private readonly monotonic: () => number,
  ) {
    this.#intervalMs = rt.config.settings.relayPruneSeconds * 1000;
    this.#next = monotonic() + this.#intervalMs;
  }

  /** The sweep of a relay starting now, or undefined when `settings.relayPrune` is off. */
  static start(rt: Runtime, monotonic: () => number): IdleSweep | undefined {
    return rt.config.settings.relayPrune ? new IdleSweep(rt, monotonic) : undefined;
  }

  /**
   * Sweep if an interval has passed since the relay started or since the last attempt;
   * never throws (a failed sweep is logged, reported as `relay:error`, and waits for the
   * next interval like a successful one).
   */
  async maybe(signal: AbortSignal): Promise<void> {
    const at = this.monotonic();
    if (at < this.#next || signal.aborted) return;
    this.#next = at + this.#intervalMs;
    try {
      const deleted = await pruneEvents(this.rt, { signal });
      if (deleted > 0) this.rt.logger.info(`idle sweep pruned ${deleted} events`);
    } catch (error) {
      this.rt.logger.warn('the idle sweep could not prune; it tries again in an interval', {
        error,
      });
      this.rt.events.emit('relay:error', { error, during: 'prune' });
    }
  }
}
