/**
 * `outboxkit/testing`: run the real relay path inside unit tests.
 * @packageDocumentation
 * @module outboxkit/testing
 */
export type { AssertFiredOptions, CapturedEnvelope, CapturedTopicName } from './assert-fired.js';
export { assertFired, OutboxAssertionError } from './assert-fired.js';
// The conformance checks, free of any test runner (the vitest suites that declare them are
// `outboxkit/testing/conformance`, which imports vitest).
export type {
  ReceivedMessage,
  TransportCheckId,
  TransportConformanceOptions,
  TransportFactory,
  TransportFactoryContext,
  TransportUnderTest,
} from './conformance/transport-checks.js';
export {
  CONFORMANCE_EVENT_NAMES,
  conformanceEvent,
  conformanceItems,
  runTransportCheck,
  transportChecks,
} from './conformance/transport-checks.js';
export type {
  WakeupCheckId,
  WakeupConformanceOptions,
  WakeupFactory,
  WakeupFactoryContext,
  WakeupUnderTest,
} from './conformance/wakeup-checks.js';
export { runWakeupCheck, wakeupChecks } from './conformance/wakeup-checks.js';
export type { TestDatabase } from './databases.js';
export {
  mariadbAvailable,
  mariadbTestDatabase,
  mariadbUrl,
  mysqlTestDatabase,
  postgresAvailable,
  postgresTestSchema,
  postgresUrl,
  sqliteTestDatabase,
  withSearchPath,
} from './databases.js';
export type { DrainOptions } from './drain.js';
export { drainOutbox } from './drain.js';
export type { InlineTaskBackend } from './inline-task-backend.js';
export { inlineTaskBackend } from './inline-task-backend.js';
