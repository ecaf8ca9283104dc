import { type DatabaseCapabilities, storeCapabilities } from '../dialect-entry.js';
import type { DialectCapabilities } from '../store.js';

/**
 * SQLite: one writer at a time and no row locks (so none to skip): two relays would claim
 * the same rows, so one relay at a time (the single-writer lock), its handlers one at a
 * time, and each writing transaction takes the write lock up front (IMMEDIATE), so a second
 * writer waits on the busy timeout instead of failing with SQLITE_BUSY at its first write.
 * RETURNING on every statement kind (3.35+), savepoints, no schemas, JSON as TEXT, no
 * LISTEN/NOTIFY, and nothing in an upserted row says whether it was updated.
 */
export const SQLITE_DATABASE: DatabaseCapabilities = Object.freeze({
  listenNotify: false,
  returning: Object.freeze({ insert: true, update: true, delete: true }),
  // Sequelize 6's SQLite dialect writes no RETURNING for an update or a delete (and reads
  // an insert's id from lastID): its model statements hand back no rows.
  modelReturning: Object.freeze({ insert: false, update: false, delete: false }),
  rowLocks: false,
  skipLocked: false,
  savepoints: true,
  schemas: false,
  jsonType: 'TEXT',
  singleWriter: true,
  writeTransaction: Object.freeze({ type: 'IMMEDIATE' as const }),
  upsertUpdatedSql: null,
});

/** What the SQLite store tells the relay (derived from {@link SQLITE_DATABASE}). */
export const SQLITE_CAPABILITIES: DialectCapabilities = storeCapabilities(SQLITE_DATABASE);
