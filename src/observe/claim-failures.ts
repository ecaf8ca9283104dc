import type { OutboxLogger } from './logger.js';
import { isErrorLike, serializeError } from './serialize-error.js';

/** Options of {@link ClaimFailureLog}; the defaults are what the relay uses. */
export interface ClaimFailureLogOptions {
  /**
   * How many consecutive failed claims are logged one line each before the rest collapse.
   * @defaultValue 5
   */
  readonly individually?: number;
  /**
   * While claims keep failing, a reminder at most this often, in milliseconds.
   * @defaultValue 60000
   */
  readonly remindEveryMs?: number;
}

/**
 * What the relay says about failed claims: an outage once, not once per retry.
 *
 * The first failures of a run are logged one line each (`claim failed; retrying in 20 ms`),
 * so a passing fault — a deadlock, a restart the pool rides over — reads exactly as it
 * happened. The fifth in a row says the database looks unreachable and that the rest are
 * collapsed; from then on one line a minute at most, or at once when the error changes
 * (the database came back unmigrated, say). The first claim that succeeds says so once:
 * `database reachable again after 75.3 s (12 failed claims)`. The relay's `relay:error`
 * event still fires for every failure: observers count, logs summarise.
 *
 * Levels: a transient database error (the retry table) is a warning, any other an error;
 * the line that closes an outage is info.
 */
export class ClaimFailureLog {
  readonly #logger: OutboxLogger;
  readonly #clock: () => Date;
  readonly #individually: number;
  readonly #remindEveryMs: number;
  #failures = 0;
  #sinceMs = 0;
  #lastLineMs = 0;
  #lastKind = '';
  #transient = true;

  constructor(logger: OutboxLogger, clock: () => Date, options: ClaimFailureLogOptions = {}) {
    this.#logger = logger;
    this.#clock = clock;
    this.#individually = Math.max(1, options.individually ?? 5);
    this.#remindEveryMs = options.remindEveryMs ?? 60_000;
  }

  /** How many claims in a row have failed (0 once one succeeds). */
  get failures(): number {
    return this.#failures;
  }

  /** A claim failed; the relay waits `retryInMs` before the next. */
  failed(error: unknown, retryInMs: number, transient: boolean): void {
    const now = this.#clock().getTime();
    this.#failures += 1;
    if (this.#failures === 1) this.#sinceMs = now;
    this.#transient = transient;
    const kind = kindOf(error);
    const n = this.#failures;
    const fields = { error, failures: n };
    let line: string;
    if (n < this.#individually) {
      line = `claim failed; retrying in ${retryInMs} ms`;
    } else if (n === this.#individually) {
      line = `claim failed; retrying in ${retryInMs} ms — ${transient ? 'database unreachable: ' : ''}${n} failed claims in a row; retrying with backoff, logged once a minute until a claim succeeds`;
    } else if (kind !== this.#lastKind) {
      line = `claims still failing after ${this.#seconds(now)} s (${n} failed claims), now with another error; retrying in ${retryInMs} ms`;
    } else if (now - this.#lastLineMs >= this.#remindEveryMs) {
      line = `${transient ? 'database still unreachable' : 'claims still failing'} after ${this.#seconds(now)} s (${n} failed claims); retrying every ${retryInMs} ms`;
    } else {
      return;
    }
    this.#lastLineMs = now;
    this.#lastKind = kind;
    this.#logger[transient ? 'warn' : 'error'](line, fields);
  }

  /** A claim succeeded: closes an outage with one line, and nothing when there was none. */
  succeeded(): void {
    const n = this.#failures;
    if (n === 0) return;
    const seconds = this.#seconds(this.#clock().getTime());
    this.#failures = 0;
    this.#lastKind = '';
    const claims = `${n} failed ${n === 1 ? 'claim' : 'claims'}`;
    this.#logger.info(
      this.#transient && n >= this.#individually
        ? `database reachable again after ${seconds} s (${claims}); claiming again`
        : `claims succeed again after ${seconds} s (${claims})`,
      { failures: n, outageMs: this.#clock().getTime() - this.#sinceMs },
    );
  }

  #seconds(nowMs: number): string {
    return (Math.max(0, nowMs - this.#sinceMs) / 1000).toFixed(1);
  }
}

/** An error's identity for "is this still the same failure": its name and code, not its text. */
function kindOf(error: unknown): string {
  if (!isErrorLike(error)) return typeof error;
  const e = serializeError(error);
  return `${e.name}:${e.code ?? ''}`;
}
