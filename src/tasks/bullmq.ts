/**
 * BullMQ as the task backend (the reference's Celery: workers over Redis):
 * `bullmqTaskBackend` adds each hand-off as a BullMQ job, and `bullmqTaskWorker` runs them
 * through `outbox.deliverOne(id, claim)`.
 *
 * The queue's retries are turned off: every job is added with `attempts: 1`, and the
 * worker fails a stalled job instead of running it again (`maxStalledCount: 0`). The
 * outbox row owns retries, backoff and dead letters; the queue only carries the hand-off.
 * A redelivered job would be harmless anyway (its claim is gone, the take does nothing),
 * and a worker that died mid-task leaves its row to a relay, which reclaims it when its
 * lease lapses. BullMQ is an optional peer dependency, loaded on first use.
 */
import { checkOptionNames, optionNames } from '../declare/option-keys.js';
import type { DeliveryStatus } from '../declare/types.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { Outbox } from '../outbox.js';
import { type BullmqQueue, loadBullmq } from '../transports/bullmq/load-bullmq.js';
import { batcher, readHandOff } from './hand-off-message.js';
import { checkQueueName, positiveInt, type TaskWorker } from './options.js';
import type { TaskBackend, TaskHandOff } from './task-backend.js';

/** The options every hand-off job is added with: one attempt, gone once it ran. */
const HAND_OFF_JOB = {
  attempts: 1,
  removeOnComplete: true,
  removeOnFail: { count: 1000 },
} as const;

/** Options of {@link bullmqTaskBackend}. */
export interface BullmqTaskBackendOptions {
  /** The BullMQ queue the hand-offs go to. Run {@link bullmqTaskWorker} on the same name. */
  readonly queue: string;
  /**
   * Where Redis is, as BullMQ takes it: ioredis options (`{ host, port }`) or an ioredis
   * client of your own (never closed by `close()`).
   */
  readonly connection: object;
  /** BullMQ's key prefix. @defaultValue BullMQ's (`'bull'`) */
  readonly prefix?: string;
}

const BACKEND_OPTIONS = optionNames<BullmqTaskBackendOptions>()(['queue', 'connection', 'prefix']);

/**
 * A {@link TaskBackend} that adds each hand-off as a BullMQ job on `queue` (one attempt,
 * removed once it completes). The hand-offs of one relay batch go in ONE `addBulk`.
 * `outbox.close()` closes the queue it opened.
 *
 * @example
 * ```ts
 * const connection = { host: '127.0.0.1', port: 6379 };
 * const outbox = createOutbox(config, { sequelize, taskBackend: bullmqTaskBackend({ queue: 'outbox-tasks', connection }) });
 * // in the worker process:
 * const worker = await bullmqTaskWorker(outbox, { queue: 'outbox-tasks', connection });
 * ```
 */
export function bullmqTaskBackend(options: BullmqTaskBackendOptions): TaskBackend {
  const who = 'bullmqTaskBackend';
  checkOptionNames(who, options, BACKEND_OPTIONS);
  const queueName = checkQueueName(who, options.queue);
  checkConnection(who, options.connection);
  let opening: Promise<BullmqQueue> | undefined;
  let closed = false;
  const queue = (): Promise<BullmqQueue> => {
    opening ??= loadBullmq(`${who}()`).then(
      ({ Queue }) =>
        new Queue(queueName, {
          connection: options.connection,
          ...(options.prefix ? { prefix: options.prefix } : {}),
        }),
    );
    opening.catch(() => {
      opening = undefined;
    });
    return opening;
  };
  const send = batcher<TaskHandOff>(async (handOffs) => {
    if (closed) throw new Error(`${who}: the backend is closed`);
    const q = await queue();
    await q.addBulk(handOffs.map((h) => ({ name: 'deliver', data: { ...h }, opts: HAND_OFF_JOB })));
  });
  return {
    name: 'bullmq',
    enqueue: send,
    async close() {
      closed = true;
      const q = await opening?.catch(() => undefined);
      opening = undefined;
      await q?.close();
    },
  };
}

/** Options of {@link bullmqTaskWorker}. */
export interface BullmqTaskWorkerOptions {
  /** The queue {@link bullmqTaskBackend} adds to. */
  readonly queue: string;
  /** Where Redis is, as for {@link bullmqTaskBackend}. */
  readonly connection: object;
  /** BullMQ's key prefix. @defaultValue BullMQ's */
  readonly prefix?: string;
  /**
   * How many jobs run at once in this worker (each its own delivery, in its own
   * transaction).
   * @defaultValue 10
   */
  readonly concurrency?: number;
  /** Told each job's outcome: the status recorded, or `null` (nothing: a stale copy). */
  readonly onDelivered?: (handOff: TaskHandOff, status: DeliveryStatus | null) => void;
}

const WORKER_OPTIONS = optionNames<BullmqTaskWorkerOptions>()([
  'queue',
  'connection',
  'prefix',
  'concurrency',
  'onDelivered',
]);

/**
 * Run the hand-offs of `queue` through `outbox.deliverOne(id, { claimedBy, claimedAt })`
 * in a BullMQ `Worker`: each job takes its row under exactly the claim it carries and runs
 * the same attempt a relay runs, recorded by the outbox. A stale job (a duplicate, one held
 * past its lease, one for a settled row) completes having done nothing. A job whose data
 * is not a hand-off, or whose `deliverOne` threw (a database fault), fails and is not
 * retried: the row is reclaimed by a relay when its lease lapses. Resolves once the worker
 * is connected; `stop()` closes it (jobs in hand finish).
 */
export async function bullmqTaskWorker(
  outbox: Outbox,
  options: BullmqTaskWorkerOptions,
): Promise<TaskWorker> {
  const who = 'bullmqTaskWorker';
  checkOptionNames(who, options, WORKER_OPTIONS);
  const queueName = checkQueueName(who, options.queue);
  checkConnection(who, options.connection);
  const concurrency = positiveInt(who, 'concurrency', options.concurrency ?? 10);
  const { Worker } = await loadBullmq(`${who}()`);
  const worker = new Worker(
    queueName,
    async (job) => {
      const handOff = readHandOff(job.data, `${queueName}/${job.id}`);
      const status = await outbox.deliverOne(handOff.deliveryId, {
        claimedBy: handOff.claimedBy,
        claimedAt: handOff.claimedAt,
      });
      options.onDelivered?.(handOff, status);
      return status;
    },
    {
      connection: options.connection,
      concurrency,
      // A stalled job is failed, not run again: the row's lease is what recovers it.
      maxStalledCount: 0,
      ...(options.prefix ? { prefix: options.prefix } : {}),
    },
  );
  // Without a listener an error event would be thrown; a worker's own failures are its jobs'.
  worker.on('error', () => {});
  await worker.waitUntilReady();
  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= worker.close();
      return stopping;
    },
  };
}

function checkConnection(who: string, connection: unknown): void {
  if (typeof connection !== 'object' || connection === null) {
    throw new ConfigurationError(
      `${who}({ connection }) must be ioredis options ({ host, port }) or an ioredis client (got ${connection === null ? 'null' : typeof connection})`,
      { path: 'connection' },
    );
  }
}
