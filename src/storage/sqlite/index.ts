export { SQLITE_CAPABILITIES, SQLITE_DATABASE } from './capabilities.js';
export { sqliteDialect } from './dialect.js';
export { sqliteEntry } from './entry.js';
export { SqliteRelayLock } from './relay-lock.js';
export { SqliteStore } from './store.js';
