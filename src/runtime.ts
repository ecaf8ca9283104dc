import type { Sequelize } from 'sequelize';
import type { OutboxConfig } from './declare/define-outbox.js';
import type { SafeEmitter } from './observe/events.js';
import type { OutboxLogger } from './observe/logger.js';
import type { OutboxStore } from './storage/store.js';
import type { OutboxWakeup } from './wakeups/wakeup.js';

/**
 * What fire, the relay and the test harness share about one outbox instance. Internal:
 * reached from `outboxkit/testing` through {@link runtimeOf}, never part of the public API.
 */
export interface Runtime {
  readonly config: OutboxConfig;
  readonly sequelize: Sequelize;
  readonly store: OutboxStore;
  readonly wakeup: OutboxWakeup | undefined;
  readonly logger: OutboxLogger;
  readonly events: SafeEmitter;
  /** The real clock: when rows are recorded and attempts run. */
  readonly clock: () => Date;
  /** A value in [0, 1) for the backoff's full jitter. */
  readonly jitter: () => number;
  /** host:pid:random, the prefix of every worker id this process uses. */
  readonly processId: string;
}

const RUNTIME = Symbol.for('outboxkit.runtime');

/** Attach the runtime to an outbox instance. */
export function attachRuntime(target: object, runtime: Runtime): void {
  Object.defineProperty(target, RUNTIME, { value: runtime, enumerable: false });
}

/** The runtime behind an outbox instance (for `outboxkit/testing`). */
export function runtimeOf(outbox: object): Runtime {
  const runtime = (outbox as Record<symbol, Runtime | undefined>)[RUNTIME];
  if (!runtime) throw new TypeError('expected an outbox made by createOutbox()');
  return runtime;
}
