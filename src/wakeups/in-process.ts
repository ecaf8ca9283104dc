import { checkOptionNames, optionNames } from '../declare/option-keys.js';
import { consoleLogger, type OutboxLogger } from '../observe/logger.js';
import type { OutboxWakeup } from './wakeup.js';

/** Options of {@link inProcessWakeup}. */
export interface InProcessWakeupOptions {
  /**
   * Where a listener that throws is logged (the signal still reaches the other listeners).
   * @defaultValue the listening outbox's logger, else the console logger
   */
  readonly logger?: OutboxLogger;
}

/** Every option of {@link inProcessWakeup}, to refuse a misspelt one. */
const IN_PROCESS_OPTIONS = optionNames<InProcessWakeupOptions>()(['logger']);

/**
 * Wake the relays of this process right after a commit. The default: it costs nothing and
 * removes the poll latency whenever the relay runs in the process that fires (the demo,
 * a monolith, tests).
 *
 * Capabilities: none needed, so it serves every dialect; `fire()` calls `signal()` once
 * the outermost transaction has committed, and each listener hears it in a microtask,
 * never inside `fire()`'s own call stack. Relays in other processes hear nothing (they
 * poll): use {@link listenNotifyWakeup} or a broker wakeup for those.
 */
export function inProcessWakeup(options: InProcessWakeupOptions = {}): OutboxWakeup {
  checkOptionNames('inProcessWakeup', options, IN_PROCESS_OPTIONS);
  /** The wakeup's own logger, else the first listening outbox's, else the console's. */
  let logger = options.logger ?? consoleLogger;
  const listeners = new Set<(topics: readonly string[]) => void>();
  return {
    name: 'in-process',
    capabilities: {},
    signal(topics) {
      // A copy per signal: a listener must not see the caller's array change under it.
      const sent = Object.freeze([...topics]);
      for (const listener of listeners)
        queueMicrotask(() => {
          // Removed between the signal and this microtask: it asked not to hear any more.
          if (!listeners.has(listener)) return;
          try {
            listener(sent);
          } catch (error) {
            logger.warn('a wakeup listener threw; the other listeners still heard the signal', {
              error,
            });
          }
        });
    },
    async listen(onSignal, context) {
      if (!options.logger && context?.logger) logger = context.logger;
      // A wrapper per call, so one function listening twice is unsubscribed once per call.
      const listener = (topics: readonly string[]) => onSignal(topics);
      listeners.add(listener);
      return async () => {
        listeners.delete(listener);
      };
    },
    async close() {
      listeners.clear();
    },
  };
}
