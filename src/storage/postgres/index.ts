export { POSTGRES_CAPABILITIES } from './capabilities.js';
export { postgresDialect } from './dialect.js';
export { lockEventIdsSql, lockEventsSql } from './event-locks.js';
export { KEY_LOCK_SLOTS } from './key-locks.js';
export { type PostgresStatements, postgresStatements } from './statements.js';
export { PostgresStore } from './store.js';
