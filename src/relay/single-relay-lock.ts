import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime, TimerHandle } from '../runtime.js';
import type { SingleWriterLock } from '../storage/store.js';

/**
 * How long the single-relay lock is leased, in seconds. Short, so a relay killed with -9
 * holds it back at most this long; renewed three times per lease on the scheduler for
 * the whole life of the relay (not only between batches), so a batch or an idle wait
 * longer than the lease never lets a second relay start beside a live one. A relay whose
 * event loop is blocked for longer than this (a synchronous handler) can lose it.
 */
export const RELAY_LOCK_SECONDS = 15;

/**
 * The single-relay lock of a database that cannot split the queue (SQLite), held by one
 * relay: taken at start (refused with a message saying who holds it and when it lapses),
 * renewed on a timer, given up when the relay stops. When a renewal finds the lock taken
 * by another relay, `onLost` is called and the relay stops, finishing what it holds.
 */
export class SingleRelayLock {
  readonly #rt: Runtime;
  readonly #lock: SingleWriterLock;
  readonly #holder: string;
  #timer: TimerHandle | undefined;
  #renewing: Promise<unknown> = Promise.resolve();
  #held = false;

  private constructor(rt: Runtime, lock: SingleWriterLock, holder: string) {
    this.#rt = rt;
    this.#lock = lock;
    this.#holder = holder;
  }

  /**
   * Take the lock for `holder`, or refuse.
   * @throws {ConfigurationError} while another live relay holds it.
   */
  static async take(
    rt: Runtime,
    lock: SingleWriterLock,
    holder: string,
    onLost: () => void,
  ): Promise<SingleRelayLock> {
    const taken = new SingleRelayLock(rt, lock, holder);
    if (!(await taken.#acquire())) {
      const current = await lock.current().catch(() => undefined);
      const lapse = current
        ? `: it holds the single-relay lock (${current.holder}) until ${current.leaseUntil.toISOString()}, ${Math.max(0, Math.ceil((current.leaseUntil.getTime() - rt.clock().getTime()) / 1000))} s from now`
        : '';
      throw new ConfigurationError(
        `another relay is running on this ${rt.store.dialect} database${lapse}. ${rt.store.dialect} cannot split work between relays (no SKIP LOCKED), so run one relay; a relay that was killed holds the lock only until its lease lapses. Pass allowUnsafeConcurrency: true (CLI: --allow-unsafe-concurrency) only if you know the other one is gone`,
        { path: 'allowUnsafeConcurrency' },
      );
    }
    taken.#held = true;
    taken.#arm(onLost);
    return taken;
  }

  /** Renew now (before a claim); false when another relay took the lock. */
  async renew(): Promise<boolean> {
    try {
      if (await this.#acquire()) return true;
      this.#rt.logger.error(
        `relay ${this.#holder} lost the single-relay lock to another relay; stopping`,
      );
      return false;
    } catch (error) {
      this.#rt.events.emit('relay:error', { error, during: 'claim' });
      return true; // a database error: the claim will fail and back off
    }
  }

  /** Stop renewing and give the lock up. Idempotent; never throws. */
  async release(): Promise<void> {
    this.#timer?.cancel();
    this.#timer = undefined;
    await this.#renewing.catch(() => {});
    if (!this.#held) return;
    this.#held = false;
    await this.#lock.release(this.#holder).catch(() => {});
  }

  #acquire(): Promise<boolean> {
    const now = this.#rt.clock();
    return this.#lock.acquire(
      this.#holder,
      now,
      new Date(now.getTime() + RELAY_LOCK_SECONDS * 1000),
    );
  }

  #arm(onLost: () => void): void {
    this.#timer = this.#rt.scheduler.setTimeout(
      () => {
        this.#renewing = this.renew().then((ok) => {
          if (!this.#held) return;
          if (ok) this.#arm(onLost);
          else onLost();
        });
      },
      (RELAY_LOCK_SECONDS * 1000) / 3,
    );
  }
}
