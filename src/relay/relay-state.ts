import type { InterruptibleSleep } from '../runtime.js';

/**
 * A batch the relay has in hand, as {@link RelayState.add} tracks it: `attemptsEnded()`
 * says every attempt of it ended, so all it has left is its record (one statement).
 */
export interface HeldBatch {
  attemptsEnded(): void;
}

/**
 * The relay loop's waiting, in one small object: whether a wakeup arrived since the last
 * claim, the idle wait (ended early by a wakeup or a stop), and the batches in hand: up to
 * `maxInFlight` still running their attempts (so a wakeup during a batch, or a full claim,
 * starts the next claim at once instead of queueing behind it), and beside them up to
 * `maxRecording` more whose attempts all ended and which only wait for their record. The
 * record is the batch's last round trip to the database; the next claim need not queue
 * behind it. That is what keeps a transport's own send time (Redis's ~3.5 ms per 500
 * entries) from adding to the relay's period: with two slots counting whole batches, a
 * batch held its slot through send and record, and the next claim waited for both.
 */
export class RelayState {
  /** A wakeup arrived since the last claim. */
  woken = false;
  readonly #inFlight = new Set<Promise<void>>();
  /** How many of the batches in hand only wait for their record. */
  #recording = 0;
  readonly #waiters = new Set<() => void>();
  /** Waits for a free slot: woken also when a batch's attempts end. */
  readonly #slotWaiters = new Set<() => void>();
  #idle: AbortController | undefined;
  #interruptIdle: (() => void) | undefined;
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly #interruptible: ((ms: number) => InterruptibleSleep) | undefined;
  readonly #stop: AbortSignal;
  readonly maxInFlight: number;
  readonly maxRecording: number;

  constructor(options: {
    sleep: (ms: number, signal: AbortSignal) => Promise<void>;
    /**
     * The idle wait without an AbortController (see runtime.ts' `interruptibleSleep`),
     * used when given; the relay gives it when it sleeps on the real scheduler, and a
     * `sleep` a test injected is used as given.
     */
    interruptibleSleep?: (ms: number) => InterruptibleSleep;
    stop: AbortSignal;
    /** Batches in hand still running attempts. */
    maxInFlight: number;
    /** Batches in hand beyond those whose attempts all ended (their record left). @defaultValue 0 */
    maxRecording?: number;
  }) {
    this.#sleep = options.sleep;
    this.#interruptible = options.interruptibleSleep;
    this.#stop = options.stop;
    this.maxInFlight = options.maxInFlight;
    this.maxRecording = options.maxRecording ?? 0;
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

  /**
   * Track a batch until it settles: `run` starts it, given the handle through which it says
   * its attempts ended (at most once; a batch that never says so holds a slot of
   * `maxInFlight` until it settles).
   */
  add(run: (held: HeldBatch) => Promise<void>): void {
    let recording = false;
    const held: HeldBatch = {
      attemptsEnded: () => {
        if (recording) return;
        recording = true;
        this.#recording += 1;
        this.#slotFreed();
      },
    };
    const tracked: Promise<void> = run(held).finally(() => {
      this.#inFlight.delete(tracked);
      if (recording) this.#recording -= 1;
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
   * After a claim: wait for a free batch slot when all are taken (a slot frees when a batch
   * in hand settles, or when its attempts end and a recording slot is free); else, unless
   * the claim came back full (a backlog: more is owed, so claim the next batch while this
   * one is delivered, and the database works while the relay does) or a wakeup already
   * came, wait until a batch in hand finishes or a wakeup says something new was written.
   */
  async afterClaim(full: boolean): Promise<void> {
    if (this.#full()) {
      while (this.#full() && !this.#stop.aborted) await this.#change();
    } else if (!this.woken && !full) await this.#batchOrWake();
  }

  /** Every slot taken: too many batches running attempts, or too many in hand at all. */
  #full(): boolean {
    const held = this.#inFlight.size;
    return (
      held - this.#recording >= this.maxInFlight || held >= this.maxInFlight + this.maxRecording
    );
  }

  /** The next batch settled or its attempts ended (or a wakeup, or a stop). */
  #change(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.#slotWaiters.delete(done);
        resolve();
      };
      this.#slotWaiters.add(done);
    });
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
    this.#slotFreed();
  };

  /** Wake what waits for a slot (not what waits for a batch to settle or a wakeup). */
  #slotFreed(): void {
    for (const resolve of [...this.#slotWaiters]) resolve();
  }

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
