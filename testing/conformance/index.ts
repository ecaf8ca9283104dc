/**
 * `outboxkit/testing/conformance`: the suites every transport and wakeup runs, declared
 * with vitest (which this entry imports; `outboxkit/testing` does not). The checks
 * themselves, free of any test runner, are also exported from `outboxkit/testing`.
 * @packageDocumentation
 * @module outboxkit/testing/conformance
 */
export { pollUntil, type Settled, settlesWithin } from './support.js';
export { transportConformance } from './transport.js';
export type {
  ReceivedMessage,
  ResolvedTransportOptions,
  TransportCheck,
  TransportCheckId,
  TransportConformanceOptions,
  TransportFactory,
  TransportFactoryContext,
  TransportUnderTest,
} from './transport-checks.js';
export {
  CONFORMANCE_EVENT_NAMES,
  conformanceEvent,
  conformanceItems,
  runTransportCheck,
  transportChecks,
} from './transport-checks.js';
export { wakeupConformance } from './wakeup.js';
export type {
  ResolvedWakeupOptions,
  WakeupCheck,
  WakeupCheckId,
  WakeupConformanceOptions,
  WakeupFactory,
  WakeupFactoryContext,
  WakeupUnderTest,
} from './wakeup-checks.js';
export { runWakeupCheck, wakeupChecks } from './wakeup-checks.js';
