import type { InterruptibleSleep } from '../runtime.js';

/**
 * The relay loop's waiting, in one small object: whether a wakeup arrived since the last
 * claim, the idle wait (ended early by a wakeup or a stop), and the batches in hand (up to
 * `maxInFlight`, so a wakeup during a batch, or a full claim, starts the next claim at
 * once instead of queueing behind it).
 */
export class RelayState {
  /** A wakeup arrived since the last claim. */
  woken = false;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #waiters = new Set<() => void>();
  #idle: AbortController | undefined;
  #interruptIdle: (() => void) | undefined;
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly #interruptible: ((ms: number) => InterruptibleSleep) | undefined;
  readonly #stop: AbortSignal;
  readonly maxInFlight: number;

  constructor(options: {
    sleep: (ms: number, signal: AbortSignal) => Promise<void>;
    /**
     * The idle wait without an AbortController (see runtime.ts' `interruptibleSleep`),
     * used when given; the relay gives it when it sleeps on the real scheduler, and a
     * `sleep` a test injected is used as given.
     */
    interruptibleSleep?: (ms: number) => InterruptibleSleep;
    stop: AbortSignal;
    maxInFlight: number;
  }) {
    this.#sleep = options.sleep;
    this.#interruptible = options.interruptibleSleep;
    this.#stop = options.stop;
    this.maxInFlight = options.maxInFlight;
    this.#stop.addEventListener('abort', this.#interrupt, { once: true });
  }

  /** A wakeup: cut an idle wait (or a wait behind a batch) short. */
  wake = (): void => {
    this.woken = true;
    this.#interrupt();
  };

  /** How many batches are in hand. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Track a batch until it settles. */
  add(batch: Promise<void>): void {
    const tracked: Promise<void> = batch.finally(() => {
      this.#inFlight.delete(tracked);
      this.#interrupt();
    });
    this.#inFlight.add(tracked);
  }

  /** Wait out the poll interval, unless a wakeup or a stop comes first. */
  async idle(pollMs: number): Promise<void> {
    if (this.woken || this.#stop.aborted) return;
    if (this.#interruptible) {
      const wait = this.#interruptible(pollMs);
      this.#interruptIdle = wait.interrupt;
      try {
        await wait.done;
      } finally {
        this.#interruptIdle = undefined;
      }
      return;
    }
    this.#idle = new AbortController();
    try {
      await this.#sleep(pollMs, this.#idle.signal);
    } finally {
      this.#idle = undefined;
    }
  }

  /**
   * After a claim: wait for a free batch slot when all are taken; else, unless the claim
   * came back full (a backlog: more is owed, so claim the next batch while this one is
   * delivered, and the database works while the relay does) or a wakeup already came,
   * wait until a batch in hand finishes or a wakeup says something new was written.
   */
  async afterClaim(full: boolean): Promise<void> {
    if (this.#inFlight.size >= this.maxInFlight) await Promise.race(this.#inFlight);
    else if (!this.woken && !full) await this.#batchOrWake();
  }

  /** Nothing was claimed while batches are in hand: wait for one (or a wakeup). */
  async whileBusy(): Promise<void> {
    if (!this.woken) await this.#batchOrWake();
  }

  /** Every batch in hand, settled. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.#inFlight]);
  }

  dispose(): void {
    this.#stop.removeEventListener('abort', this.#interrupt);
  }

  #interrupt = (): void => {
    this.#interruptIdle?.();
    this.#idle?.abort();
    for (const resolve of [...this.#waiters]) resolve();
  };

  async #batchOrWake(): Promise<void> {
    if (this.#inFlight.size === 0 || this.#stop.aborted) return;
    let resolve!: () => void;
    const woken = new Promise<void>((r) => {
      resolve = r;
    });
    this.#waiters.add(resolve);
    try {
      await Promise.race([...this.#inFlight, woken]);
    } finally {
      this.#waiters.delete(resolve);
    }
  }
}
