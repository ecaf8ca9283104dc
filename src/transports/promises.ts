/**
 * Two waits the broker clients need, in one place: a send that a stopping relay must not
 * wait for, and a release that must not hang a shutdown.
 */

/**
 * Settle with `promise`, or reject with the signal's reason as soon as it aborts: a send
 * stuck on an unresponsive broker must not hold a stopping relay. A command already
 * written may still be applied by the broker afterwards; the item is then reported failed
 * and sent again (at least once), never reported sent without the broker's answer. The
 * abandoned promise's own rejection is swallowed, so it is never unhandled.
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => {});
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Wait for `promise` at most `ms` (never rejects): a best-effort release. */
export async function withinMs(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise.catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}
