export { POSTGRES_CAPABILITIES, POSTGRES_DATABASE } from './capabilities.js';
export { postgresDialect } from './dialect.js';
export { postgresEntry } from './entry.js';
export { lockEventIdsSql, lockEventsSql } from './event-locks.js';
export { KEY_LOCK_SLOTS } from './key-locks.js';
export { type PostgresStatements, postgresStatements } from './statements.js';
export { PostgresStore } from './store.js';
