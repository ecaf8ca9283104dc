/**
 * BullMQ is an optional peer dependency: only an app that runs BullMQ queues installs it,
 * and `import 'outboxkit'` never loads it. `bullmqTransport()`, `bullmqTaskBackend()` and
 * `bullmqTaskWorker()` load it here, the first time they need a queue, and say how to
 * install it when it is missing.
 */
import { ConfigurationError } from '../../errors/outbox-error.js';

/** What outboxkit uses of BullMQ's `Queue`, typed by shape (no BullMQ types needed). */
export interface BullmqQueue {
  add(name: string, data: unknown, options?: Record<string, unknown>): Promise<unknown>;
  addBulk(
    jobs: readonly { name: string; data: unknown; opts?: Record<string, unknown> }[],
  ): Promise<unknown[]>;
  close(): Promise<void>;
}

/** What outboxkit uses of BullMQ's `Worker`, typed by shape. */
export interface BullmqWorker {
  close(force?: boolean): Promise<void>;
  waitUntilReady(): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
}

/** A job as a BullMQ worker's processor is handed it (the part outboxkit reads). */
export interface BullmqJob {
  readonly id?: string;
  readonly name: string;
  readonly data: unknown;
}

/** The BullMQ classes outboxkit constructs. */
export interface BullmqModule {
  Queue: new (name: string, options: Record<string, unknown>) => BullmqQueue;
  Worker: new (
    name: string,
    processor: (job: BullmqJob) => Promise<unknown>,
    options: Record<string, unknown>,
  ) => BullmqWorker;
}

let loaded: Promise<BullmqModule> | undefined;

/** Load BullMQ once; `who` names the factory in the install hint. */
export function loadBullmq(who: string): Promise<BullmqModule> {
  loaded ??= import('bullmq').then((m) => m as unknown as BullmqModule);
  return loaded.catch((error: unknown) => {
    loaded = undefined;
    const e = error as NodeJS.ErrnoException;
    if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !/['"]bullmq['"]/.test(String(e.message)))
      throw error;
    throw new ConfigurationError(
      `${who} needs the bullmq package, which is not installed: run \`npm install bullmq\``,
      { cause: error },
    );
  });
}
