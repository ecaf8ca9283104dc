export {
  MARIADB_CAPABILITIES,
  MARIADB_DATABASE,
  MYSQL_CAPABILITIES,
  MYSQL_DATABASE,
} from './capabilities.js';
export { mariadbDialect, mysqlDialect } from './dialect.js';
export { mariadbEntry, mysqlEntry } from './entry.js';
export { MariadbStore } from './store.js';
