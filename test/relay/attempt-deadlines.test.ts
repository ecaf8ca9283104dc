import { performance } from 'node:perf_hooks';
import { setTimeout as wait } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { DeadlineEntry, endDeadline, startDeadline } from '../../src/relay/attempt-deadlines.js';

/** An entry that notes when it expired. */
class Entry extends DeadlineEntry {
  expiredAt: number | undefined;
  constructor(
    readonly name: string,
    readonly log: string[],
  ) {
    super();
  }
  override expire(): void {
    this.expiredAt = performance.now();
    this.log.push(this.name);
  }
}

describe('attempt deadlines (one timer per limit, on Node timers)', () => {
  it('every entry expires once, in deadline order, never before its limit; an ended one never does', async () => {
    const log: string[] = [];
    const started = new Map<string, number>();
    const start = (e: Entry, ms: number) => {
      started.set(e.name, performance.now());
      startDeadline(e, ms);
    };
    const a = new Entry('a', log);
    const b = new Entry('b', log);
    const ended = new Entry('ended', log);
    const longer = new Entry('longer', log);
    start(a, 30);
    start(ended, 30);
    await wait(5);
    start(b, 30);
    start(longer, 60);
    endDeadline(ended);
    endDeadline(ended); // twice is nothing

    await wait(120);
    expect(log).toEqual(['a', 'b', 'longer']);
    for (const [e, ms] of [
      [a, 30],
      [b, 30],
      [longer, 60],
    ] as const) {
      // Never early (a timer may fire a fraction of a millisecond before its deadline).
      expect(e.expiredAt! - started.get(e.name)!).toBeGreaterThanOrEqual(ms);
    }
    expect(ended.expiredAt).toBeUndefined();
    // Ending an entry after it expired is nothing, and the list takes new entries.
    endDeadline(a);
    const c = new Entry('c', log);
    start(c, 30);
    await wait(60);
    expect(log).toEqual(['a', 'b', 'longer', 'c']);
  });

  it('an entry ended at the head lets the next one expire on time', async () => {
    const log: string[] = [];
    const first = new Entry('first', log);
    const second = new Entry('second', log);
    startDeadline(first, 20);
    await wait(10);
    startDeadline(second, 20);
    endDeadline(first);
    await wait(50);
    expect(log).toEqual(['second']);
  });
});
