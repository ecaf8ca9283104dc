/**
 * The backlog over the last hour, sampled by the console itself: `outbox.health()` every
 * `sampleIntervalMs` (one statement over the owed and dead rows' indexes) and at every
 * view of the health page, kept in memory for an hour. A console started a minute ago
 * shows a minute; Prometheus (`outbox.metrics()`) is where a longer history lives.
 */
import type { OutboxHealth } from '../src/ops/health.js';

/** One reading of the backlog. */
export interface BacklogSample {
  /** When it was read, epoch ms (the outbox's clock). */
  readonly at: number;
  readonly owed: number;
  readonly scheduled: number;
  readonly claimed: number;
  readonly dead: number;
}

/** How long samples are kept: the chart's window. */
export const SAMPLE_WINDOW_MS = 3600_000;

/** The samples of the last hour, oldest first. */
export class BacklogSamples {
  readonly #samples: BacklogSample[] = [];
  /** Keep a reading; readings closer than a second to the last one replace it. */
  record(health: OutboxHealth): void {
    const at = health.at.getTime();
    const sample: BacklogSample = {
      at,
      owed: health.owed,
      scheduled: health.scheduled,
      claimed: health.claimed,
      dead: health.dead,
    };
    const last = this.#samples[this.#samples.length - 1];
    if (last && Math.abs(at - last.at) < 1000) this.#samples[this.#samples.length - 1] = sample;
    else this.#samples.push(sample);
    this.#samples.sort((a, b) => a.at - b.at);
    const from = at - SAMPLE_WINDOW_MS;
    while (this.#samples.length > 0 && this.#samples[0].at < from) this.#samples.shift();
  }
  /** The samples inside the hour before `now`, oldest first. */
  within(now: number): readonly BacklogSample[] {
    return this.#samples.filter((s) => s.at >= now - SAMPLE_WINDOW_MS && s.at <= now);
  }
}
