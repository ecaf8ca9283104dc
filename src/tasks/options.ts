/** What the task backends and workers check and share. */
import { ConfigurationError } from '../errors/outbox-error.js';

/** A running task worker: stop it to stop fetching (jobs in hand finish). */
export interface TaskWorker {
  /** Stop fetching; resolves once the worker is off. Idempotent. */
  stop(): Promise<void>;
}

/** A queue name both queues accept: letters, digits, `_`, `.` and `-`. */
export function checkQueueName(who: string, queue: unknown): string {
  if (typeof queue !== 'string' || !/^[\w.-]+$/.test(queue)) {
    throw new ConfigurationError(
      `${who}({ queue }) must be a queue name of letters, digits, _ . and - (got ${JSON.stringify(queue)})`,
      { path: 'queue' },
    );
  }
  return queue;
}

/** An integer option ≥ 1, or a ConfigurationError naming it. */
export function positiveInt(who: string, name: string, value: unknown): number {
  if (!Number.isInteger(value) || (value as number) < 1) {
    throw new ConfigurationError(`${who}({ ${name} }) must be an integer ≥ 1 (got ${value})`, {
      path: name,
    });
  }
  return value as number;
}
