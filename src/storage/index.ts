/**
 * The storage seam: role interfaces (`store.ts`), dialect capabilities as data, shared SQL
 * in `sql/`, and one folder per dialect holding only what differs (`postgres/`, `sqlite/`;
 * `mariadb/` later, see `sql/dialect.ts`), each described by ONE entry of the dialect
 * registry (`dialects.ts`).
 */
export type {
  DatabaseCapabilities,
  DialectConnection,
  DialectEntry,
  DialectMigration,
  ReturningKind,
  StoreOptions,
} from './dialect-entry.js';
export { storeCapabilities } from './dialect-entry.js';
export {
  capabilitiesOf,
  type DialectLookup,
  type DialectName,
  dialectEntries,
  dialectNamed,
  dialectOf,
  dialectOfUrl,
  dialectsWith,
  fileDatabaseUrl,
  findDialect,
  listDialects,
  listUrlPrefixes,
  supportedDialects,
  wakeupRefusal,
} from './dialects.js';
export { PostgresStore, postgresStatements } from './postgres/index.js';
export { SqliteStore } from './sqlite/index.js';
export type {
  ClaimedDelivery,
  ClaimOptions,
  ClaimToken,
  DeliveryCounts,
  DeliveryQueue,
  DeliveryRow,
  DeliveryRowInput,
  DialectCapabilities,
  DueEvent,
  EventLog,
  EventRowInput,
  Maintenance,
  OutboxStore,
  Outcome,
  PruneCounts,
  PruneWindow,
  RelayLockHolder,
  SingleWriterLock,
  StoredEvent,
  WrittenEvent,
} from './store.js';
export { quoteIdent, type TableNames, tableNames } from './tables.js';
