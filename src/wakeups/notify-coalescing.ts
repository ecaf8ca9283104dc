/**
 * NOTIFY coalescing per interval (`listenNotifyWakeup({ notifyCoalesceMs })`, the
 * domain-events reference's `NOTIFY_COALESCE_SECONDS`): at most one NOTIFY per interval
 * from one outbox instance (one per process and database, as `createOutbox` is used).
 *
 * Why. PostgreSQL serialises the commits of every transaction that queued a NOTIFY on one
 * global lock (the notification queue's), so under many producers the wakeup, not the
 * insert, caps how many events a second commit (issue 7's notes measured it). One signal
 * per interval is all a relay needs: a single wake makes it claim everything owed.
 *
 * How. The first write of an interval carries its NOTIFY in its own statement, as without
 * coalescing (`admit()`); the writes after it in the interval carry none, and once each has
 * COMMITTED its topics are folded into one trailing NOTIFY sent when the interval ends
 * (`fold()`), in a transaction of its own. Nothing is lost: a folded write that commits
 * after the trailer went out starts the next trailer, so every committed event is
 * announced by a NOTIFY sent after its commit; a rolled-back one folds nothing. The
 * skipped NOTIFYs are safe for the same reason a lost one is: the relays poll anyway.
 *
 * The clock and the timer are the outbox's runtime's (`createOutbox({ clock, scheduler })`),
 * so a test moves time instead of waiting for an interval.
 */
import type { OutboxLogger } from '../observe/logger.js';
import type { NotifyGate, Scheduler, TimerHandle } from '../runtime.js';

/** What a {@link NotifyCoalescer} needs of its outbox. */
export interface NotifyCoalescerOptions {
  /** The interval, in milliseconds: at most one NOTIFY per interval. */
  readonly intervalMs: number;
  /** The outbox's clock, in epoch milliseconds. */
  readonly nowMs: () => number;
  /** The outbox's timers. */
  readonly scheduler: Scheduler;
  /** Send one NOTIFY per topic now, committed on its own. */
  readonly send: (topics: readonly string[]) => Promise<void>;
  readonly logger: OutboxLogger;
}

/** One outbox's NOTIFY throttle: see the module's comment. */
export class NotifyCoalescer implements NotifyGate {
  /** When the last NOTIFY was admitted into a write or sent as a trailer. */
  #lastMs = Number.NEGATIVE_INFINITY;
  /** The topics of committed writes that carried no NOTIFY, for the trailer. */
  readonly #folded = new Set<string>();
  #timer: TimerHandle | undefined;
  /** The trailer being sent, for `close()` to await. */
  #sending: Promise<void> | undefined;

  constructor(private readonly options: NotifyCoalescerOptions) {}

  /**
   * Whether the write about to be made may carry its NOTIFY: yes for the first write of an
   * interval (the interval starts now), no while a trailer is due or inside the interval.
   */
  admit(): boolean {
    const now = this.options.nowMs();
    if (this.#timer !== undefined || now - this.#lastMs < this.options.intervalMs) return false;
    this.#lastMs = now;
    return true;
  }

  /**
   * A write that carried no NOTIFY has committed: announce its topics with the trailing
   * NOTIFY at the end of the current interval (at once if it has already ended).
   */
  fold(topics: readonly string[]): void {
    for (const topic of topics) this.#folded.add(topic);
    if (this.#timer !== undefined || this.#folded.size === 0) return;
    const wait = Math.max(0, this.#lastMs + this.options.intervalMs - this.options.nowMs());
    this.#timer = this.options.scheduler.setTimeout(() => this.#flush(), wait);
  }

  /** Send the trailer now (on `outbox.close()`), and wait for it. */
  async close(): Promise<void> {
    this.#timer?.cancel();
    this.#flush();
    await this.#sending;
  }

  #flush(): void {
    this.#timer = undefined;
    if (this.#folded.size === 0) return;
    const topics = [...this.#folded];
    this.#folded.clear();
    this.#lastMs = this.options.nowMs();
    this.#sending = this.options.send(topics).then(undefined, (error: unknown) => {
      this.options.logger.warn('the trailing NOTIFY of coalesced writes failed; relays will poll', {
        error,
      });
    });
  }
}
