import type { DialectCapabilities } from '../store.js';

/**
 * PostgreSQL: row locks with SKIP LOCKED let N relays split the queue; many writers at
 * once; a handler's transaction needs no special mode; `fire()`'s own statement can send
 * the LISTEN/NOTIFY wakeup, which PostgreSQL delivers on commit and drops on rollback.
 */
export const POSTGRES_CAPABILITIES: DialectCapabilities = Object.freeze({
  splitsQueue: true,
  writers: 'many',
  handlerTransaction: Object.freeze({}),
  notifiesInWrite: true,
});
