/**
 * The bare loop's latency mode (bare/worker.ts), shared with the experiments that set it
 * beside the relay (experiments/claim-in-relay.ts): LISTEN on a channel; on each NOTIFY
 * (or a poll that backs up a lost one) claim until a claim comes back short, telling
 * `claimed` when each claim started and returned; mark the rows succeeded through `mark`,
 * one batch after another, without waiting for it before the next claim.
 */
import { nowMs } from '../common.js';
import type { PgClient } from '../pg.js';
import type { ClaimedRow } from './statements.js';

export interface BareLatencyLoop {
  /** The connection that LISTENs (it runs nothing else). */
  readonly listener: PgClient;
  readonly channel: string;
  /** A claim of up to `batchSize` rows at `now`. */
  claim(now: Date): Promise<ClaimedRow[]>;
  readonly batchSize: number;
  /** The rows of one claim, when it started and when it returned (monotonic ms). */
  claimed(rows: readonly ClaimedRow[], startedMs: number, endedMs: number): void;
  /** Mark a claim's rows succeeded (on a connection of its own). */
  mark(rows: readonly ClaimedRow[]): Promise<unknown>;
  /** The poll that backs up a lost NOTIFY. */
  readonly pollIntervalMs: number;
  readonly signal: AbortSignal;
  /** Told once the LISTEN is in place. */
  ready?(): void;
}

/** Run the loop until `signal` aborts; resolves once the last mark is written. */
export async function runBareLatencyLoop(o: BareLatencyLoop): Promise<void> {
  let pending = true; // a first pass at start, as the relay makes
  let wake: () => void = () => {};
  const woken = () => {
    pending = true;
    wake();
  };
  o.listener.on('notification', woken);
  o.signal.addEventListener('abort', woken);
  await o.listener.query(`LISTEN "${o.channel}"`);
  let marking: Promise<unknown> = Promise.resolve();
  o.ready?.();
  while (!o.signal.aborted) {
    if (!pending) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, o.pollIntervalMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = () => {};
    }
    pending = false;
    for (;;) {
      const started = nowMs();
      const rows = await o.claim(new Date());
      o.claimed(rows, started, nowMs());
      if (rows.length > 0) marking = marking.then(() => o.mark(rows));
      if (rows.length < o.batchSize) break;
    }
  }
  await marking;
}
