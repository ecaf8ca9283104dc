/**
 * `outboxkit/testing`: run the real relay path inside unit tests.
 * @packageDocumentation
 */
export { assertFired, OutboxAssertionError } from './assert-fired.js';
export type { TestDatabase } from './databases.js';
export {
  postgresAvailable,
  postgresTestSchema,
  postgresUrl,
  sqliteTestDatabase,
} from './databases.js';
export type { DrainOptions } from './drain.js';
export { drainOutbox } from './drain.js';
