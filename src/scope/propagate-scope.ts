import { frames } from './frame.js';

/**
 * Carry the current scope into work that runs somewhere the async context does not
 * follow: a job handed to a queue or pool that was started outside the block (its worker
 * loop runs in the context it was started in), a callback registered with a long-lived
 * emitter, a batch flushed by a timer the first caller set. `AsyncLocalStorage` follows
 * `await`, promises and timers a block starts itself; it cannot know that a function
 * pushed onto someone else's queue belongs to the block, and nothing fails when it is
 * lost: the events simply arrive with no actor.
 *
 * Call it where the work is handed over, not where the function is declared: it captures
 * the scope in effect when it is called, and at module load there is none, so a wrapper
 * made then carries nothing. The wrapper holds the scope's values, not a context, so it
 * may be called any number of times (one wrapped callback per item of a fan-out). Called
 * outside every block, the wrapper runs `fn` outside every block too.
 *
 * It cannot cross a process or thread boundary (a worker thread gets no function); there,
 * the event row is the answer: fire in the worker inside `causedBy(event, …)`.
 *
 * @example
 * ```ts
 * queue.push(propagateScope(() => importRow(row)));
 * ```
 */
export function propagateScope<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  if (typeof fn !== 'function') {
    throw new TypeError('propagateScope(fn): fn must be a function');
  }
  const frame = frames.getStore();
  return frame
    ? (...args: A): R => frames.run(frame, fn, ...args)
    : (...args: A): R => frames.exit(fn, ...args);
}
