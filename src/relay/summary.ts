/**
 * The relay's periodic one-line summary: at the default level (info) a running relay says
 * what it did since its last line — delivered, failed, dead, orphaned, handed back — and
 * how much is owed now, every `summaryIntervalMs` (60 s unless told). A relay that says
 * nothing between its start and its stop cannot be told from one that is stuck.
 *
 * Timed on the outbox's scheduler (`createOutbox({ scheduler })`), so a test moves fake
 * time to reach a line rather than sleeping through an interval; the owed count is one
 * read of the health's backlog statement (the owed rows' partial index, never history),
 * and a read that fails leaves `owed` out of that line rather than stopping the relay.
 */
import type { DeliveryStatus } from '../declare/types.js';
import type { Runtime, TimerHandle } from '../runtime.js';

/** The relay's summary interval unless `runRelay({ summaryIntervalMs })` says otherwise. */
export const DEFAULT_SUMMARY_INTERVAL_MS = 60_000;

/** The counts the summary reads (the relay's report, as its batches add to it). */
type Counts = Readonly<Record<DeliveryStatus, number>> & { readonly handedBack: number };

/** One relay's summary lines; {@link RelaySummary.stop} ends them (and awaits a line being read). */
export class RelaySummary {
  readonly #rt: Runtime;
  readonly #workerId: string;
  readonly #intervalMs: number;
  readonly #report: Counts;
  #last: Counts;
  #timer: TimerHandle | undefined;
  #writing: Promise<void> | undefined;
  #stopped = false;
  readonly #served: readonly Runtime[];

  private constructor(
    rt: Runtime,
    workerId: string,
    intervalMs: number,
    report: Counts,
    served: readonly Runtime[],
  ) {
    this.#rt = rt;
    this.#served = served;
    this.#workerId = workerId;
    this.#intervalMs = intervalMs;
    this.#report = report;
    this.#last = { ...report };
  }

  /** Start the lines: the first an interval from now; none when `intervalMs` is 0. */
  static start(
    rt: Runtime,
    workerId: string,
    intervalMs: number,
    report: Counts,
    served: readonly Runtime[] = [rt],
  ): RelaySummary | undefined {
    if (intervalMs === 0) return undefined;
    const summary = new RelaySummary(rt, workerId, intervalMs, report, served);
    summary.#arm();
    return summary;
  }

  #arm(): void {
    this.#timer = this.#rt.scheduler.setTimeout(() => {
      this.#writing = this.#write().finally(() => {
        this.#writing = undefined;
        if (!this.#stopped) this.#arm();
      });
    }, this.#intervalMs);
  }

  async #write(): Promise<void> {
    const now = { ...this.#report };
    const last = this.#last;
    this.#last = now;
    let owed: number | undefined;
    try {
      owed = 0;
      // Every schema the relay serves (its outbox's own alone, unless given schemas).
      for (const target of this.#served) {
        const rows = await target.store.readBacklog(this.#rt.clock());
        owed += rows.reduce((sum, r) => sum + r.owed, 0);
      }
    } catch {
      owed = undefined; // the relay's own claims report a database that fails
    }
    const delta = {
      delivered: now.succeeded - last.succeeded,
      failed: now.failed - last.failed,
      dead: now.dead - last.dead,
      orphaned: now.orphaned - last.orphaned,
      handedBack: now.handedBack - last.handedBack,
    };
    const seconds = Math.round(this.#intervalMs / 1000);
    this.#rt.logger.info(
      `relay ${this.#workerId}: delivered ${delta.delivered}, failed ${delta.failed}, dead ${delta.dead}${delta.orphaned ? `, orphaned ${delta.orphaned}` : ''}${delta.handedBack ? `, handed back ${delta.handedBack}` : ''} in the last ${seconds}s; owed ${owed ?? 'unknown (the database did not answer)'}`,
      { workerId: this.#workerId, ...delta, owed: owed ?? null, intervalMs: this.#intervalMs },
    );
  }

  /** No more lines; resolves once a line being written has been. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#timer?.cancel();
    await this.#writing;
  }
}
