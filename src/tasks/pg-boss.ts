/**
 * pg-boss as the task backend (the reference's Django Tasks: a queue in PostgreSQL, no
 * broker to install): `pgBossTaskBackend` enqueues each hand-off as a pg-boss job, and
 * `pgBossTaskWorker` runs them through `outbox.deliverOne(id, claim)`.
 *
 * The queue's retries are turned off (`retryLimit: 0` on the queue and on every job): the
 * outbox row owns retries, backoff and dead letters, and the queue only carries the
 * hand-off. A job pg-boss would retry (a worker that died, a job that expired) is
 * harmless anyway: its claim is gone, so the take does nothing and the row is reclaimed by
 * a relay when its lease lapses.
 *
 * pg-boss 10 is supported (Node 20); pg-boss 11+ needs Node 22.
 */
import { checkOptionNames, optionNames } from '../declare/option-keys.js';
import type { DeliveryStatus } from '../declare/types.js';
import type { Outbox } from '../outbox.js';
import { checkPgBoss, type PgBossJob, queueCreator } from '../transports/pg-boss/pg-boss-client.js';
import { batcher, readHandOff } from './hand-off-message.js';
import { checkQueueName, positiveInt, type TaskWorker } from './options.js';
import type { TaskBackend, TaskHandOff } from './task-backend.js';

/** The queue options a hand-off queue is created with: pg-boss retries nothing. */
const NO_RETRIES = { retryLimit: 0 } as const;

/** Options of {@link pgBossTaskBackend}. */
export interface PgBossTaskBackendOptions {
  /**
   * The pg-boss queue the hand-offs go to (created, without retries, at the first
   * hand-off if it does not exist). Run {@link pgBossTaskWorker} on the same name.
   */
  readonly queue: string;
}

const BACKEND_OPTIONS = optionNames<PgBossTaskBackendOptions>()(['queue']);

/**
 * A {@link TaskBackend} that enqueues each hand-off as a pg-boss job on `queue`, with
 * pg-boss's retries off. The hand-offs of one relay batch go in ONE insert. `boss` is
 * yours: started by you, and never stopped by `outbox.close()`.
 *
 * @example
 * ```ts
 * const boss = new PgBoss({ connectionString: url, schema: 'pgboss' });
 * await boss.start();
 * const outbox = createOutbox(config, { sequelize, taskBackend: pgBossTaskBackend(boss, { queue: 'outbox-tasks' }) });
 * // in the worker process:
 * await pgBossTaskWorker(outbox, boss, { queue: 'outbox-tasks' });
 * ```
 */
export function pgBossTaskBackend(boss: unknown, options: PgBossTaskBackendOptions): TaskBackend {
  const who = 'pgBossTaskBackend';
  checkOptionNames(who, options, BACKEND_OPTIONS);
  const client = checkPgBoss(`${who}(boss)`, boss);
  const queue = checkQueueName(who, options.queue);
  const ensure = queueCreator(client, NO_RETRIES);
  const send = batcher<TaskHandOff>(async (handOffs) => {
    await ensure(queue);
    await client.insert(handOffs.map((h) => ({ name: queue, data: { ...h }, retryLimit: 0 })));
  });
  return {
    name: 'pg-boss',
    enqueue: send,
    async close() {},
  };
}

/** Options of {@link pgBossTaskWorker}. */
export interface PgBossTaskWorkerOptions {
  /** The queue {@link pgBossTaskBackend} enqueues to. */
  readonly queue: string;
  /**
   * How many jobs one fetch takes; they run at once (each its own delivery, in its own
   * transaction: a batch holds at most one row per ordering key and receiver).
   * @defaultValue 10
   */
  readonly batchSize?: number;
  /**
   * How often an idle worker polls, in seconds (pg-boss 10's minimum is 0.5).
   * @defaultValue 0.5
   */
  readonly pollingIntervalSeconds?: number;
  /**
   * How many pg-boss workers (each fetching `batchSize`) this registers.
   * @defaultValue 1
   */
  readonly workers?: number;
  /** Told each job's outcome: the status recorded, or `null` (nothing: a stale copy). */
  readonly onDelivered?: (handOff: TaskHandOff, status: DeliveryStatus | null) => void;
}

const WORKER_OPTIONS = optionNames<PgBossTaskWorkerOptions>()([
  'queue',
  'batchSize',
  'pollingIntervalSeconds',
  'workers',
  'onDelivered',
]);

/**
 * Run the hand-offs of `queue` through `outbox.deliverOne(id, { claimedBy, claimedAt })`:
 * each job takes its row under exactly the claim it carries and runs the same attempt a
 * relay runs, recorded by the outbox (its verdict, its retry, its dead letter). A stale job
 * (a duplicate, one held past its lease, one for a settled row) completes having done
 * nothing. A job whose data is not a hand-off fails; so does one whose `deliverOne` threw
 * (a database fault), and pg-boss does not retry it: the row is reclaimed by a relay when
 * its lease lapses.
 */
export async function pgBossTaskWorker(
  outbox: Outbox,
  boss: unknown,
  options: PgBossTaskWorkerOptions,
): Promise<TaskWorker> {
  const who = 'pgBossTaskWorker';
  checkOptionNames(who, options, WORKER_OPTIONS);
  const client = checkPgBoss(`${who}(outbox, boss)`, boss);
  const queue = checkQueueName(who, options.queue);
  const batchSize = positiveInt(who, 'batchSize', options.batchSize ?? 10);
  const workers = positiveInt(who, 'workers', options.workers ?? 1);
  await queueCreator(client, NO_RETRIES)(queue);
  const run = async (job: PgBossJob): Promise<void> => {
    const handOff = readHandOff(job.data, `${queue}/${job.id}`);
    const status = await outbox.deliverOne(handOff.deliveryId, {
      claimedBy: handOff.claimedBy,
      claimedAt: handOff.claimedAt,
    });
    options.onDelivered?.(handOff, status);
  };
  const ids: string[] = [];
  for (let i = 0; i < workers; i++) {
    ids.push(
      await client.work(
        queue,
        { batchSize, pollingIntervalSeconds: options.pollingIntervalSeconds ?? 0.5 },
        async (jobs) => {
          await Promise.all(jobs.map(run));
        },
      ),
    );
  }
  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= Promise.all(ids.map((id) => client.offWork({ id }))).then(() => {});
      return stopping;
    },
  };
}
