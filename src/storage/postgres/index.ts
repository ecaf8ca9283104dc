export { POSTGRES_CAPABILITIES } from './capabilities.js';
export { postgresDialect } from './dialect.js';
export { KEY_LOCK_SLOTS } from './key-locks.js';
export { type PostgresStatements, postgresStatements } from './statements.js';
export { PostgresStore } from './store.js';
