import { type DatabaseCapabilities, storeCapabilities } from '../dialect-entry.js';
import type { DialectCapabilities } from '../store.js';

/**
 * MariaDB (10.6+): row locks with SKIP LOCKED let N relays split the queue; many writers
 * at once; no LISTEN/NOTIFY (wakeups come from the process, Redis, RabbitMQ, Kafka or
 * polling); RETURNING on INSERT and DELETE (10.5+), never on UPDATE; savepoints; no
 * schemas inside a database; JSON is LONGTEXT with a JSON_VALID check (the codec's text is
 * kept byte for byte). Sequelize 6's `mariadb` dialect writes RETURNING for none of its
 * model statements (an insert's id comes from the OK packet), and nothing in an upserted
 * row says whether it was updated.
 */
export const MARIADB_DATABASE: DatabaseCapabilities = Object.freeze({
  listenNotify: false,
  returning: Object.freeze({ insert: true, update: false, delete: true }),
  modelReturning: Object.freeze({ insert: false, update: false, delete: false }),
  rowLocks: true,
  skipLocked: true,
  savepoints: true,
  schemas: false,
  jsonType: 'JSON',
  singleWriter: false,
  writeTransaction: Object.freeze({}),
  upsertUpdatedSql: null,
});

/**
 * MySQL (8.0+, Sequelize's `mysql` dialect, the mysql2 driver): MariaDB's capabilities but
 * RETURNING, which MySQL has on no statement kind; so every statement of this dialect's
 * store reads what it wrote instead (the insert's events by uuid, change capture's rows
 * before the write). Tested here against MariaDB through mysql2, which exercises exactly
 * those paths; MySQL 8 servers themselves are not tested here. JSON is LONGTEXT (below).
 */
export const MYSQL_DATABASE: DatabaseCapabilities = Object.freeze({
  ...MARIADB_DATABASE,
  returning: Object.freeze({ insert: false, update: false, delete: false }),
  // MySQL's JSON type is binary: it sorts an object's keys, so a payload would not read back
  // as written. LONGTEXT keeps the codec's text.
  jsonType: 'LONGTEXT',
});

/** What the MariaDB store tells the relay (derived from {@link MARIADB_DATABASE}). */
export const MARIADB_CAPABILITIES: DialectCapabilities = storeCapabilities(MARIADB_DATABASE);
/** What the MySQL store tells the relay (derived from {@link MYSQL_DATABASE}). */
export const MYSQL_CAPABILITIES: DialectCapabilities = storeCapabilities(MYSQL_DATABASE);
