import { type DatabaseCapabilities, storeCapabilities } from '../dialect-entry.js';
import type { DialectCapabilities } from '../store.js';

/**
 * PostgreSQL: row locks with SKIP LOCKED let N relays split the queue; many writers at
 * once; a write can queue a NOTIFY the server sends on commit (and drops on rollback);
 * RETURNING on every statement kind; schemas; JSONB; an upsert's row says whether it was
 * updated (`xmax` is set by the ON CONFLICT DO UPDATE that wrote the row version).
 */
export const POSTGRES_DATABASE: DatabaseCapabilities = Object.freeze({
  listenNotify: true,
  returning: Object.freeze({ insert: true, update: true, delete: true }),
  // Sequelize 6 never adds RETURNING to a hard destroy's DELETE, on any dialect.
  modelReturning: Object.freeze({ insert: true, update: true, delete: false }),
  rowLocks: true,
  skipLocked: true,
  savepoints: true,
  schemas: true,
  jsonType: 'jsonb',
  singleWriter: false,
  writeTransaction: Object.freeze({}),
  upsertUpdatedSql: `("xmax"::text <> '0')`,
});

/** What the PostgreSQL store tells the relay (derived from {@link POSTGRES_DATABASE}). */
export const POSTGRES_CAPABILITIES: DialectCapabilities = storeCapabilities(POSTGRES_DATABASE);
