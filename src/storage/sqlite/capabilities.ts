import type { DialectCapabilities } from '../store.js';

/**
 * SQLite: one writer at a time and no skipped row locks, so two relays would claim the
 * same rows: one relay at a time (the single-writer lock), its handlers one at a time, and
 * each handler's transaction takes the write lock up front (IMMEDIATE), so a second writer
 * waits on the busy timeout instead of failing with SQLITE_BUSY at its first write. No
 * wakeup can be sent from inside the write.
 */
export const SQLITE_CAPABILITIES: DialectCapabilities = Object.freeze({
  splitsQueue: false,
  writers: 'one',
  handlerTransaction: Object.freeze({ type: 'IMMEDIATE' as const }),
  notifiesInWrite: false,
});
