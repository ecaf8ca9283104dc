/**
 * The time limits of attempts on Node's own timers: one list per limit (in ms), ordered
 * by deadline since every entry of a list waits the same time, and one timer per list,
 * armed for its head. An attempt is an entry of its own (the fields below), so starting
 * and ending its limit allocates nothing and touches two links.
 *
 * Why not a Node timer per attempt: a transport's `deliver` makes one attempt per row, the
 * relay's hot path, and a `setTimeout` per row was ~170 B of garbage (the Timeout, its
 * async resource) and an insertion into and a removal from Node's timer lists
 * (bench/experiments/transport-cpu.ts `--heap-profile`). This is the same scheme Node's
 * timers use inside (a list per duration), without the object per timer.
 *
 * Only for the real scheduler: an injected {@link Scheduler} (a test's clock) gets a timer
 * per attempt through its own `setTimeout`, so moving its time still fires the limit.
 */
import { performance } from 'node:perf_hooks';

/** One attempt's place in its limit's list; `expire` is called once its time is up. */
export abstract class DeadlineEntry {
  /** @internal when the limit runs out, on `performance.now()` */
  deadlineAt = 0;
  /** @internal */
  deadlineList: DeadlineList | undefined = undefined;
  /** @internal */
  deadlinePrev: DeadlineEntry | undefined = undefined;
  /** @internal */
  deadlineNext: DeadlineEntry | undefined = undefined;
  /** @internal The limit ran out (called at most once, the entry already out of its list). */
  abstract expire(): void;
}

/** The entries waiting `ms`, earliest deadline first, and the one timer armed for them. */
class DeadlineList {
  readonly #ms: number;
  #head: DeadlineEntry | undefined;
  #tail: DeadlineEntry | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #fire = () => this.#expireDue();

  constructor(ms: number) {
    this.#ms = ms;
  }

  add(entry: DeadlineEntry): void {
    entry.deadlineAt = performance.now() + this.#ms;
    entry.deadlineList = this;
    entry.deadlinePrev = this.#tail;
    entry.deadlineNext = undefined;
    if (this.#tail) this.#tail.deadlineNext = entry;
    else this.#head = entry;
    this.#tail = entry;
    if (!this.#timer) this.#arm(this.#ms);
  }

  /** Take `entry` out; the timer stays armed and re-arms for the next head when it fires. */
  remove(entry: DeadlineEntry): void {
    const { deadlinePrev: prev, deadlineNext: next } = entry;
    if (prev) prev.deadlineNext = next;
    else this.#head = next;
    if (next) next.deadlinePrev = prev;
    else this.#tail = prev;
    entry.deadlineList = entry.deadlinePrev = entry.deadlineNext = undefined;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(this.#fire, Math.max(1, Math.ceil(ms))).unref();
  }

  #expireDue(): void {
    this.#timer = undefined;
    const now = performance.now();
    // A Node timer can fire a fraction of a millisecond before performance.now() says the
    // deadline came: an entry not yet due is waited for again, never expired early.
    while (this.#head && this.#head.deadlineAt <= now) {
      const due = this.#head;
      this.remove(due);
      try {
        due.expire();
      } catch {
        // An expiry never throws (it settles its attempt); the list stays whole if it did.
      }
    }
    if (this.#head) this.#arm(this.#head.deadlineAt - now);
  }
}

const lists = new Map<number, DeadlineList>();

/** Start `entry`'s limit of `ms` milliseconds. */
export function startDeadline(entry: DeadlineEntry, ms: number): void {
  let list = lists.get(ms);
  if (!list) {
    list = new DeadlineList(ms);
    lists.set(ms, list);
  }
  list.add(entry);
}

/** End `entry`'s limit (it finished in time); nothing when it already ran out or ended. */
export function endDeadline(entry: DeadlineEntry): void {
  entry.deadlineList?.remove(entry);
}
