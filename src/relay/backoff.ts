/**
 * How long to wait before attempt number `attempt + 1`, after `attempt` failed, in seconds.
 *
 * Full jitter: the delay is drawn from the whole window up to the exponential ceiling
 * (`base * 2^(attempt-1)`, capped at `cap`), not added on top of it. Retrying a shared
 * downstream at ceiling-plus-a-bit keeps every failed delivery in the same cohort, which
 * is the thundering herd the backoff exists to break up.
 *
 * `jitter` is supplied by the caller, a value in [0, 1), rather than drawn here, so the
 * schedule is a pure function of its arguments and a test can assert the curve.
 */
export function backoffSeconds(
  attempt: number,
  options: { base: number; cap: number; jitter: number },
): number {
  if (!Number.isInteger(attempt) || attempt < 1)
    throw new RangeError(`attempt must be an integer ≥ 1 (got ${attempt})`);
  if (!(options.jitter >= 0 && options.jitter < 1))
    throw new RangeError(`jitter must be in [0, 1) (got ${options.jitter})`);
  const ceiling = Math.min(options.cap, options.base * 2 ** Math.min(attempt - 1, 1023));
  return ceiling * options.jitter;
}
