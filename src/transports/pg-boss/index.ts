export type { PgBossClient, PgBossJob, PgBossJobInsert } from './pg-boss-client.js';
export type { PgBossTransportOptions } from './pg-boss-transport.js';
export { pgBossTransport } from './pg-boss-transport.js';
