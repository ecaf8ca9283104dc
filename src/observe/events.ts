import { EventEmitter } from 'node:events';
import type { OutboxLogger } from './logger.js';

/**
 * What the relay reports, by event name. Listen with `outbox.on(name, listener)`.
 *
 * Every report about one event carries its `eventId`, the event's UUID (`OutboxEvent.id`,
 * the `outbox-event-id` header): what receivers dedupe on and what `cancelDeliveries`,
 * `replayEvents` and the logs name, so an observer can tie a failure to the event without
 * a lookup by delivery id.
 */
export interface OutboxEventMap {
  /** A delivery succeeded. `delayMs` is the time since the event was recorded. */
  'relay:delivered': {
    deliveryId: string;
    /** The event's UUID. */
    eventId: string;
    receiverKey: string;
    eventName: string;
    attempt: number;
    delayMs: number;
  };
  /** An attempt failed and will be retried at `nextAttemptAt`. */
  'relay:failed': {
    deliveryId: string;
    /** The event's UUID. */
    eventId: string;
    receiverKey: string;
    eventName: string;
    attempt: number;
    error: string;
    nextAttemptAt: Date;
  };
  /** A delivery was dead-lettered: its budget is spent, or it raised PermanentFailure. */
  'relay:deadLettered': {
    deliveryId: string;
    /** The event's UUID. */
    eventId: string;
    receiverKey: string;
    eventName: string;
    attempt: number;
    error: string;
  };
  /**
   * A `site: 'task'` delivery was handed to the task backend (`taskBackend`, its name)
   * under its claim; its task's worker records the attempt.
   */
  'relay:handedOff': {
    deliveryId: string;
    receiverKey: string;
    eventName: string;
    taskBackend: string;
  };
  /** A delivery names a receiver the config no longer declares. */
  'relay:orphaned': {
    deliveryId: string;
    /** The event's UUID. */
    eventId: string;
    receiverKey: string;
    eventName: string;
  };
  /** A database error the relay survived (it retries with backoff). */
  'relay:error': {
    error: unknown;
    during: 'claim' | 'record' | 'renew' | 'release' | 'wait' | 'prune' | 'handOff';
  };
  /** An `onCommit` receiver threw; logged, never raised. */
  'fire:onCommitFailed': {
    receiverKey: string;
    /** The event's UUID. */
    eventId: string;
    eventName: string;
    error: unknown;
  };
  /**
   * A claim statement returned (`rows` taken, possibly none), and how long it took on a
   * monotonic clock: what `outbox.metrics()` turns into `outbox_claim_duration_seconds`.
   */
  'relay:claimed': { rows: number; durationMs: number };
  /**
   * A batch's outcomes were written in one statement (`rows` it changed), and how long the
   * successful try took: `outbox_record_duration_seconds`.
   */
  'relay:recorded': { rows: number; durationMs: number };
  /**
   * One batch of the relay's idle sweep was deleted (`events` and their `deliveries`
   * rows), in its own transaction. A sweep of a large history is many of these, with the
   * relay claiming between them.
   */
  'relay:pruned': { events: number; deliveries: number };
}

/**
 * A typed emitter whose listeners can never hurt the emitter: a listener that throws is
 * caught and logged (graphile-worker's `safeEmit`), because an observer must not be able
 * to kill the relay it observes.
 */
export class SafeEmitter {
  readonly #emitter = new EventEmitter();

  constructor(private readonly logger: OutboxLogger) {
    this.#emitter.setMaxListeners(100);
  }

  on<K extends keyof OutboxEventMap>(
    name: K,
    listener: (payload: OutboxEventMap[K]) => void,
  ): () => void {
    this.#emitter.on(name, listener);
    return () => this.#emitter.off(name, listener);
  }

  /**
   * Whether anyone listens to `name`: the relay asks before it builds a payload per
   * delivery, so a process with no observer pays for none (no object, no clock read).
   */
  listens(name: keyof OutboxEventMap): boolean {
    return this.#emitter.listenerCount(name) > 0;
  }

  emit<K extends keyof OutboxEventMap>(name: K, payload: OutboxEventMap[K]): void {
    if (this.#emitter.listenerCount(name) === 0) return;
    for (const listener of this.#emitter.listeners(name)) {
      try {
        (listener as (p: OutboxEventMap[K]) => void)(payload);
      } catch (error) {
        this.logger.error(`a listener of ${name} threw; ignored`, { error });
      }
    }
  }
}
