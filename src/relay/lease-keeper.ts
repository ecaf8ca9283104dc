import type { ResolvedReceiver } from '../declare/define-outbox.js';
import type { Runtime, TimerHandle } from '../runtime.js';
import type { ClaimedDelivery, ClaimToken } from '../storage/store.js';
import { receiverLeaseSeconds } from './claim-lease.js';

/** The shortest pause between two renewals, in milliseconds. */
const MIN_RENEWAL_MS = 50;

/**
 * Keeps a claimed batch's leases alive while the batch is worked, and is disposed in
 * `finally`.
 *
 * Every row still open is renewed three times per lease, on the runtime's scheduler (so
 * tests move time instead of waiting): an unstarted row to the claim's lease, a started
 * one to its own receiver's. Before a row starts, {@link beforeStart} extends it to its
 * receiver's lease unless the claim already covers that, so a receiver declaring a long
 * `leaseSeconds` is safe without every claim stamping the longest lease.
 */
export class LeaseKeeper {
  readonly #rt: Runtime;
  readonly #token: ClaimToken;
  readonly #claimSeconds: number;
  /** Open rows → the lease each is kept at, in seconds. */
  readonly #open = new Map<string, number>();
  /** Open rows → when their lease lapses, as far as this keeper knows. */
  readonly #until = new Map<string, number>();
  #timer: TimerHandle | undefined;
  #renewing: Promise<void> = Promise.resolve();
  #disposed = false;

  constructor(
    rt: Runtime,
    token: ClaimToken,
    rows: readonly ClaimedDelivery[],
    claim: { readonly leaseSeconds: number; readonly leaseUntil: Date },
  ) {
    this.#rt = rt;
    this.#token = token;
    this.#claimSeconds = claim.leaseSeconds;
    for (const row of rows) {
      this.#open.set(row.id, claim.leaseSeconds);
      this.#until.set(row.id, claim.leaseUntil.getTime());
    }
    this.#arm();
  }

  /**
   * Extend `row` to its receiver's lease before it starts, unless the lease it holds
   * already covers one whole lease of its receiver from now (a row that starts early in
   * its claim costs no write). A failed extension is logged and the attempt goes on: the
   * renewal timer tries again, and at worst the row is delivered twice (at least once).
   */
  async beforeStart(row: ClaimedDelivery, receiver: ResolvedReceiver): Promise<void> {
    const seconds = receiverLeaseSeconds(this.#rt.config, receiver);
    if (!this.#open.has(row.id)) return;
    this.#open.set(row.id, seconds);
    const wanted = this.#rt.clock().getTime() + seconds * 1000;
    if ((this.#until.get(row.id) ?? 0) >= wanted) return;
    try {
      if ((await this.#rt.store.renewLeases([row.id], this.#token, new Date(wanted))) > 0)
        this.#until.set(row.id, wanted);
    } catch (error) {
      this.#failed(error);
    }
  }

  /** Stop renewing these rows: their outcome is known. */
  settle(ids: Iterable<string>): void {
    for (const id of ids) this.#open.delete(id);
  }

  /**
   * The earliest lapse among the rows still open (or among all, once settled): how long
   * the batch may go on trying to record what it did before another worker may take it.
   */
  heldUntil(): Date {
    let min = Number.POSITIVE_INFINITY;
    for (const at of this.#until.values()) min = Math.min(min, at);
    return new Date(Number.isFinite(min) ? min : 0);
  }

  /** Stop the timer and wait for a renewal in flight. Idempotent. */
  async dispose(): Promise<void> {
    this.#disposed = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    await this.#renewing;
  }

  #arm(): void {
    if (this.#disposed) return;
    let shortest = this.#claimSeconds;
    for (const s of this.#open.values()) shortest = Math.min(shortest, s);
    this.#timer = this.#rt.scheduler.setTimeout(
      () => {
        this.#renewing = this.#renew().finally(() => this.#arm());
      },
      Math.max(MIN_RENEWAL_MS, (shortest * 1000) / 3),
    );
  }

  async #renew(): Promise<void> {
    const bySeconds = new Map<number, string[]>();
    for (const [id, s] of this.#open) bySeconds.set(s, [...(bySeconds.get(s) ?? []), id]);
    for (const [seconds, ids] of bySeconds) {
      if (this.#disposed) return;
      const until = this.#rt.clock().getTime() + seconds * 1000;
      try {
        await this.#rt.store.renewLeases(ids, this.#token, new Date(until));
        for (const id of ids) this.#until.set(id, until);
      } catch (error) {
        this.#failed(error);
      }
    }
  }

  #failed(error: unknown): void {
    this.#rt.logger.warn('could not renew the lease of a batch; it may be delivered again', {
      error,
    });
    this.#rt.events.emit('relay:error', { error, during: 'renew' });
  }
}
