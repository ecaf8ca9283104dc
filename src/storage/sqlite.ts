/** The SQLite store; its files are in `./sqlite/`. */
export { SqliteStore } from './sqlite/index.js';
