import { AssertionError } from 'node:assert';
import { randomBytes } from 'node:crypto';

/** A name unique to one check's run: give the topic, queue, stream or channel under test it. */
export const newRunId = (): string =>
  `c${Date.now().toString(36)}${randomBytes(4).toString('hex')}`;

/** How a promise settled, when it settled in time. */
export type Settled<T> =
  | { readonly status: 'fulfilled'; readonly value: T }
  | { readonly status: 'rejected'; readonly reason: unknown };

/**
 * Wait for `promise` to settle, for at most `ms`. A promise still pending then fails the
 * check with an assertion naming `what`: the call hangs, which a relay would only notice
 * at its timeout (and a stop not at all).
 */
export async function settlesWithin<T>(
  promise: Promise<T>,
  ms: number,
  what: string,
): Promise<Settled<T>> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), ms);
  });
  try {
    const outcome = await Promise.race([
      promise.then(
        (value): Settled<T> => ({ status: 'fulfilled', value }),
        (reason: unknown): Settled<T> => ({ status: 'rejected', reason }),
      ),
      late,
    ]);
    if (outcome === 'late') {
      // The call goes on in the background; keep its eventual rejection from going unhandled.
      promise.catch(() => {});
      throw new AssertionError({ message: `${what} did not settle within ${ms} ms` });
    }
    return outcome;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Read `read()` again and again (every few milliseconds) until `done` holds of what it
 * returns or `timeoutMs` passes; returns the last reading either way, so the caller's
 * assertion shows what was there.
 */
export async function pollUntil<T>(
  read: () => Promise<T> | T,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let delayMs = 2;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() >= deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    delayMs = Math.min(delayMs * 2, 25);
  }
}

/** A real pause, for the few checks that must see that nothing arrives. */
export const pause = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));
