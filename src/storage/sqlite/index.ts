export { SQLITE_CAPABILITIES } from './capabilities.js';
export { sqliteDialect } from './dialect.js';
export { SqliteRelayLock } from './relay-lock.js';
export { SqliteStore } from './store.js';
