/**
 * The relay's idle sweep: a relay that finds nothing to claim prunes (`pruneEvents()` with
 * its defaults), so an event declared to be deleted once consumed goes within minutes
 * without a cron line.
 *
 * At most once per `settings.relayPruneSeconds`, the FIRST ONE AN INTERVAL AFTER THE RELAY
 * STARTS rather than at its first idle pass: a relay restarted often, or run for a few
 * passes, then never sweeps at all. The interval is read on a monotonic clock, apart from
 * the claim's wall clock (which a test sets to anything, and an NTP step moves, which
 * would silence or flood the sweep). It advances only when a sweep was begun, and a
 * failed one counts: it is not retried before the next interval. Every relay sweeps
 * whatever its lane; the prune's re-check at the delete keeps N relays from deleting
 * twice. The stop signal is read between the sweep's batches.
 *
 * A SWEEP YIELDS TO THE RELAY'S OWN WORK. A sweep of a large history takes minutes, and a
 * relay awaiting it claims nothing meanwhile (measured: a 1,000,000-event run spent most
 * of its wall time inside sweeps). So between batches the sweep stops when a wakeup says
 * something was written, or once it has held the relay for one poll interval (the relay's
 * own, `runRelay({ pollIntervalMs })`: the longest a polling relay waits to notice work
 * anyway); the relay claims, and the sweep goes on until nothing is due: at the next idle
 * pass without waiting for another interval, and after each claim that took rows, while
 * that batch is delivered (at least one prune batch per claim, so a relay that is never idle
 * again still finishes the sweep it began). A relay therefore waits at most one prune batch
 * (`settings.pruneBatchRows` rows) past a wakeup.
 */
import { pruneEvents } from '../ops/prune.js';
import type { Runtime } from '../runtime.js';

/** Milliseconds on a clock no wall-clock step moves: `performance.now()`. */
export const monotonicMs = (): number => performance.now();

export class IdleSweep {
  #next: number;
  readonly #intervalMs: number;
  /** A sweep that yielded to work: its next idle pass goes on with it at once. */
  #unfinished = false;
  /** Events deleted by the sweep under way, over the passes it yielded across. */
  #deleted = 0;

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

  /** Whether a sweep yielded to work and goes on at the next idle pass. */
  get unfinished(): boolean {
    return this.#unfinished;
  }

  /**
   * Sweep if an interval has passed since the relay started or since the last sweep began,
   * or go on with a sweep that yielded. Returns between batches once `woken()` says work
   * arrived or `yieldAfterMs` (the relay's poll interval, on the monotonic clock) has
   * passed; never throws (a failed sweep is logged, reported as `relay:error`, and waits
   * for the next interval like a finished one).
   */
  async maybe(
    signal: AbortSignal,
    woken: () => boolean = () => false,
    yieldAfterMs: number = this.rt.config.settings.pollIntervalMs,
  ): Promise<void> {
    const at = this.monotonic();
    if (signal.aborted) return;
    if (!this.#unfinished) {
      if (at < this.#next) return;
      this.#next = at + this.#intervalMs;
      this.#deleted = 0;
    }
    this.#unfinished = false;
    const until = at + yieldAfterMs;
    const cut = new AbortController();
    const onStop = () => cut.abort();
    signal.addEventListener('abort', onStop, { once: true });
    let yielded = false;
    try {
      this.#deleted += await pruneEvents(this.rt, {
        signal: cut.signal,
        onBatch: (batch) => {
          this.rt.events.emit('relay:pruned', {
            events: batch.events,
            deliveries: batch.deliveries,
          });
          if (!signal.aborted && (woken() || this.monotonic() >= until)) {
            yielded = true;
            cut.abort();
          }
        },
      });
      if (yielded) {
        this.#unfinished = true;
        return;
      }
      if (this.#deleted > 0) this.rt.logger.info(`idle sweep pruned ${this.#deleted} events`);
    } catch (error) {
      this.rt.logger.warn('the idle sweep could not prune; it tries again in an interval', {
        error,
      });
      this.rt.events.emit('relay:error', { error, during: 'prune' });
    } finally {
      signal.removeEventListener('abort', onStop);
    }
  }
}
