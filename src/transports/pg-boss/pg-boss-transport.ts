import { checkOptionNames, optionNames } from '../../declare/option-keys.js';
import type {
  DeliveryItem,
  DeliveryResult,
  OutboxDelivery,
  OutboxEvent,
} from '../../declare/types.js';
import { ConfigurationError } from '../../errors/outbox-error.js';
import { abortable } from '../promises.js';
import { queueOf, taskMessage } from '../task-message.js';
import { checkPgBoss, type PgBossJobInsert, queueCreator } from './pg-boss-client.js';

/** Options of {@link pgBossTransport}. */
export interface PgBossTransportOptions {
  /** A started PgBoss (pg-boss 10): yours, never stopped by `close()`. */
  readonly boss: unknown;
  /**
   * The queue each event's job goes to: a name, or a function of the event. Created at the
   * first send if it does not exist (pg-boss 10 drops a job sent to a queue that was never
   * created, so this is not optional).
   * @defaultValue the event's name (`tasks.sendInvoice`)
   */
  readonly queue?: string | ((event: OutboxEvent) => string);
  /**
   * pg-boss job options for every job (`retryLimit`, `retryDelay`, `expireInSeconds`,
   * `priority`, `singletonKey` …): the task's own retries, which are the queue's business
   * here — the outbox only guarantees the job is added.
   */
  readonly jobOptions?: Omit<PgBossJobInsert, 'id' | 'name' | 'data'>;
  /** A name for logs and the catalogue. @defaultValue `'pg-boss'` */
  readonly name?: string;
}

const OPTIONS = optionNames<PgBossTransportOptions>()(['boss', 'queue', 'jobOptions', 'name']);

/**
 * A transport that adds one pg-boss job per event (the topic-outbox reference's
 * `TaskiqDelivery`: a task fired through the outbox, so it is queued if and only if the
 * transaction that fired it commits). The job's id is the event's id, so a send repeated
 * after a lost answer is deduplicated by pg-boss (`ON CONFLICT DO NOTHING`, for as long as
 * the job is kept); its data is the event ({@link TaskMessage}). A batch is ONE insert:
 * every item is added, or the batch fails and the relay retries it.
 *
 * Run it by a topic relay of its own, so tasks never queue behind other deliveries:
 * `receiver('tasks.*', { deliver: pgBossTransport({ boss }) })` and
 * `outbox.runRelay({ topics: ['tasks.*'] })`.
 */
export function pgBossTransport(options: PgBossTransportOptions): OutboxDelivery {
  const who = 'pgBossTransport';
  checkOptionNames(who, options, OPTIONS);
  const boss = checkPgBoss(`${who}({ boss })`, options.boss);
  if (
    options.queue !== undefined &&
    typeof options.queue !== 'function' &&
    !(typeof options.queue === 'string' && /^[\w.-]+$/.test(options.queue))
  ) {
    throw new ConfigurationError(
      `${who}({ queue }) must be a queue name of letters, digits, _ . and - or a function of the event (got ${JSON.stringify(options.queue)})`,
      { path: 'queue' },
    );
  }
  const ensure = queueCreator(boss, {});
  let closed = false;
  return {
    name: options.name ?? 'pg-boss',
    async deliverBatch(
      items: readonly DeliveryItem[],
      { signal },
    ): Promise<readonly DeliveryResult[]> {
      if (signal.aborted) return items.map(() => ({ status: 'failed', error: signal.reason }));
      if (closed) throw new Error(`${who}: the transport is closed`);
      const results: DeliveryResult[] = new Array(items.length);
      const jobs: PgBossJobInsert[] = [];
      const sent: number[] = [];
      const queues = new Set<string>();
      items.forEach(({ event }, i) => {
        try {
          const name = queueOf(who, options.queue, event);
          queues.add(name);
          jobs.push({ ...options.jobOptions, id: event.id, name, data: taskMessage(event) });
          sent.push(i);
        } catch (error) {
          results[i] = { status: 'failed', error };
        }
      });
      if (jobs.length > 0) {
        await abortable(
          (async () => {
            for (const name of queues) await ensure(name);
            await boss.insert(jobs);
          })(),
          signal,
        );
      }
      for (const i of sent) results[i] = { status: 'sent' };
      return results;
    },
    async close() {
      closed = true;
    },
  };
}
