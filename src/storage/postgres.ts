/** The PostgreSQL store; its files are in `./postgres/`. */
export { type PostgresStatements, PostgresStore, postgresStatements } from './postgres/index.js';
