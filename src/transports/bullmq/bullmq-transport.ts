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
import { type BullmqQueue, loadBullmq } from './load-bullmq.js';

/** Options of {@link bullmqTransport}. */
export interface BullmqTransportOptions {
  /**
   * Where Redis is, as BullMQ takes it: ioredis options (`{ host, port }`; the transport
   * then fails a send fast while Redis is away, and never replays it later) or an ioredis
   * client of your own (used as it is, never closed by `close()`).
   */
  readonly connection: object;
  /**
   * The queue each event's job goes to: a name, or a function of the event.
   * @defaultValue the event's name (`tasks.sendInvoice`)
   */
  readonly queue?: string | ((event: OutboxEvent) => string);
  /**
   * BullMQ job options for every job (`attempts`, `backoff`, `removeOnComplete` …): the
   * task's own retries, which are the queue's business here. `jobId` is always the event's id.
   */
  readonly jobOptions?: Record<string, unknown>;
  /** BullMQ's key prefix. @defaultValue BullMQ's (`'bull'`) */
  readonly prefix?: string;
  /** A name for logs and the catalogue. @defaultValue `'bullmq'` */
  readonly name?: string;
}

const OPTIONS = optionNames<BullmqTransportOptions>()([
  'connection',
  'queue',
  'jobOptions',
  'prefix',
  'name',
]);

/**
 * A transport that adds one BullMQ job per event (the topic-outbox reference's
 * `TaskiqDelivery`): named by the event's name, its data the event ({@link TaskMessage}),
 * its `jobId` the event's id, so a send repeated after a lost answer is deduplicated by
 * BullMQ for as long as the job is kept. A batch goes as one `addBulk` per queue.
 *
 * Run it by a topic relay of its own: `receiver('tasks.*', { deliver: bullmqTransport({
 * connection }) })` and `outbox.runRelay({ topics: ['tasks.*'] })`.
 */
export function bullmqTransport(options: BullmqTransportOptions): OutboxDelivery {
  const who = 'bullmqTransport';
  checkOptionNames(who, options, OPTIONS);
  if (typeof options.connection !== 'object' || options.connection === null) {
    throw new ConfigurationError(
      `${who}({ connection }) must be ioredis options ({ host, port }) or an ioredis client`,
      { path: 'connection' },
    );
  }
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
  // Options, not a client: fail a send fast while Redis is away, and never replay it after
  // a reconnect (the relay has recorded it failed and sends it again).
  const connection =
    typeof (options.connection as { status?: unknown }).status === 'string'
      ? options.connection
      : {
          ...options.connection,
          maxRetriesPerRequest: 1,
          enableOfflineQueue: false,
          autoResendUnfulfilledCommands: false,
        };
  const queues = new Map<string, Promise<BullmqQueue>>();
  let closed = false;
  const queue = (name: string): Promise<BullmqQueue> => {
    let q = queues.get(name);
    if (!q) {
      q = loadBullmq(`${who}()`).then(({ Queue }) => {
        const made = new Queue(name, {
          connection,
          ...(options.prefix ? { prefix: options.prefix } : {}),
        });
        (made as unknown as { on(e: string, f: () => void): void }).on('error', () => {});
        return made;
      });
      queues.set(name, q);
      q.catch(() => queues.delete(name));
    }
    return q;
  };
  return {
    name: options.name ?? 'bullmq',
    async deliverBatch(
      items: readonly DeliveryItem[],
      { signal },
    ): Promise<readonly DeliveryResult[]> {
      if (signal.aborted) return items.map(() => ({ status: 'failed', error: signal.reason }));
      if (closed) throw new Error(`${who}: the transport is closed`);
      const results: DeliveryResult[] = new Array(items.length);
      const byQueue = new Map<string, { i: number; event: OutboxEvent }[]>();
      items.forEach(({ event }, i) => {
        try {
          const name = queueOf(who, options.queue, event);
          const list = byQueue.get(name);
          if (list) list.push({ i, event });
          else byQueue.set(name, [{ i, event }]);
        } catch (error) {
          results[i] = { status: 'failed', error };
        }
      });
      await Promise.all(
        [...byQueue].map(async ([name, list]) => {
          try {
            const q = await abortable(queue(name), signal);
            await abortable(
              q.addBulk(
                list.map(({ event }) => ({
                  name: event.name,
                  data: taskMessage(event),
                  opts: { ...options.jobOptions, jobId: event.id },
                })),
              ),
              signal,
            );
            for (const { i } of list) results[i] = { status: 'sent' };
          } catch (error) {
            for (const { i } of list) results[i] = { status: 'failed', error };
          }
        }),
      );
      return results;
    },
    async close() {
      closed = true;
      const open = [...queues.values()];
      queues.clear();
      await Promise.allSettled(open.map(async (q) => (await q.catch(() => undefined))?.close()));
    },
  };
}
