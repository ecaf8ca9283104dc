import type { OutboxLogger } from '../observe/logger.js';

/**
 * Hand one signal to every listener of a wakeup, each in turn. A listener that throws is
 * logged and skipped, never allowed to keep the signal from the others: a relay that
 * misses a wakeup only waits for its poll, but one listener's bug must not make every
 * relay of the process wait.
 */
export function dispatchSignal(
  listeners: Iterable<(topics: readonly string[]) => void>,
  topics: readonly string[],
  logger: OutboxLogger,
): void {
  for (const listener of [...listeners]) {
    try {
      listener(topics);
    } catch (error) {
      logger.warn('a wakeup listener threw; the other listeners still heard the signal', {
        error,
      });
    }
  }
}
