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
  /** When the rows kept at the claim's lease lapse, as far as this keeper knows. */
  #claimUntil: number;
  /** Rows still open (their verdict not yet written). */
  readonly #open = new Set<string>();
  /** Open rows extended to their own receiver's lease, and when that lapses. */
  readonly #own = new Map<string, { seconds: number; until: number }>();
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
    this.#claimUntil = claim.leaseUntil.getTime();
    for (const row of rows) this.#open.add(row.id);
    this.#arm();
  }

  /**
   * Extend `row` to its receiver's lease before it starts, unless the lease it holds
   * already covers one whole lease of its receiver from now (a row that starts early in
   * its claim costs no write, and no promise: `undefined` then). A failed extension is
   * logged and the attempt goes on: the renewal timer tries again, and at worst the row is
   * delivered twice (at least once). `nowMs` is the clock's now, read once by a caller
   * that starts many rows at once (a `deliverBatch` call), else read here.
   */
  beforeStart(
    row: ClaimedDelivery,
    receiver: ResolvedReceiver,
    nowMs?: number,
  ): Promise<void> | undefined {
    if (!this.#open.has(row.id)) return undefined;
    const seconds = receiverLeaseSeconds(this.#rt.config, receiver);
    const wanted = (nowMs ?? this.#rt.nowMs()) + seconds * 1000;
    const held = this.#own.get(row.id)?.until ?? this.#claimUntil;
    if (held >= wanted) return undefined; // the hot path
    const own = { seconds, until: held };
    this.#own.set(row.id, own);
    return this.#extend(row.id, own, wanted);
  }

  async #extend(id: string, own: { until: number }, wanted: number): Promise<void> {
    try {
      if ((await this.#rt.store.renewLeases([id], this.#token, new Date(wanted))) > 0)
        own.until = wanted;
    } catch (error) {
      this.#failed(error);
    }
  }

  /** Stop renewing these rows: their fate is written. */
  settle(ids: Iterable<string>): void {
    for (const id of ids) {
      this.#open.delete(id);
      this.#own.delete(id);
    }
  }

  /**
   * The earliest lapse among the batch's leases, as far as this keeper knows: how long the
   * batch may go on trying to record what it did before another worker may take its rows.
   */
  heldUntil(): Date {
    let min = this.#claimUntil;
    for (const own of this.#own.values()) min = Math.min(min, own.until);
    return new Date(min);
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
    for (const own of this.#own.values()) shortest = Math.min(shortest, own.seconds);
    this.#timer = this.#rt.scheduler.setTimeout(
      () => {
        this.#renewing = this.#renew().finally(() => this.#arm());
      },
      Math.max(MIN_RENEWAL_MS, (shortest * 1000) / 3),
    );
  }

  /** Renew every open row: those at the claim's lease in one statement, the others by lease. */
  async #renew(): Promise<void> {
    const groups = new Map<number, string[]>();
    for (const id of this.#open) {
      const seconds = this.#own.get(id)?.seconds ?? this.#claimSeconds;
      const ids = groups.get(seconds);
      if (ids) ids.push(id);
      else groups.set(seconds, [id]);
    }
    for (const [seconds, ids] of groups) {
      if (this.#disposed) return;
      const until = this.#rt.clock().getTime() + seconds * 1000;
      try {
        await this.#rt.store.renewLeases(ids, this.#token, new Date(until));
        for (const id of ids) {
          const own = this.#own.get(id);
          if (own) own.until = until;
        }
        if (seconds === this.#claimSeconds) this.#claimUntil = until;
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
