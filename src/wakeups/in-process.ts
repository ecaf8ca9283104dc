import type { OutboxWakeup } from './wakeup.js';

/**
 * Wake the relays of this process right after a commit. The default: it costs nothing and
 * removes the poll latency whenever the relay runs in the process that fires (the demo,
 * a monolith, tests).
 */
export function inProcessWakeup(): OutboxWakeup {
  const listeners = new Set<(topics: readonly string[]) => void>();
  return {
    name: 'in-process',
    signal(topics) {
      for (const listener of listeners) queueMicrotask(() => listener(topics));
    },
    async listen(onSignal) {
      listeners.add(onSignal);
      return async () => {
        listeners.delete(onSignal);
      };
    },
    async close() {
      listeners.clear();
    },
  };
}
