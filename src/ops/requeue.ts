/**
 * `outbox.requeueDead(options)`: give dead-lettered deliveries their attempt budget back.
 *
 * Dead is where a delivery stops on its own; it is not where it stops for good — and a
 * dead letter holds back the later events of its ordering key until it is requeued (or
 * replayed). Each row requeued becomes pending with its attempts at zero rather than
 * spent (a row requeued at its limit would dead-letter again on its first failure, and the
 * operator would learn nothing new), owed from now: `due_at` and `available_at` are the
 * moment of the requeue, for the same reason applied to time — `giveUpAfter` is measured
 * from `due_at`, and a dead letter requeued a month after its event would otherwise be
 * past a one-day bound on its first deferral. `last_error` is kept: the reason it died
 * stays readable (in `outbox dead`) until an attempt replaces it. A cancelled row is never
 * requeued: it was withdrawn on purpose (`replayEvents` reopens it, by name).
 *
 * Scoped by receiver (one downstream was broken and now is not), by row (an operator
 * picked the ones they understand from the dead-letter list), and by topic — names and
 * `prefix*` patterns, as a relay's `topics` take them.
 *
 * Works in chunks of `settings.batchSize` rows, oldest event first, each chunk its own
 * transaction that locks its rows' events first (the order cancel, replay and prune share),
 * so no lock is held long however many rows are dead. Each chunk wakes the relays once it
 * commits (src/ops/wake-relays.ts), naming its events' topics, so a relay idle on a long
 * poll delivers the requeued rows at once.
 */

import type { Transaction } from 'sequelize';
import { topicPatternProblem } from '../declare/define-outbox.js';
import type { EventColumnValue } from '../declare/event-columns.js';
import { ValidationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import type { DeadFilter } from '../storage/store.js';
import {
  columnsOption,
  deliveryIdList,
  describe,
  eventsOfColumns,
  limitOption,
  receiverKeyOption,
  tenantOption,
} from './arguments.js';
import { inOperationTransaction } from './in-transaction.js';
import { wakeRelaysOnCommit } from './wake-relays.js';

/** Options of {@link Outbox.requeueDead}. */
export interface RequeueDeadOptions {
  /** Only this receiver's dead letters. @defaultValue every receiver's */
  readonly receiverKey?: string;
  /** Only these rows (delivery ids, as `deadLetters()` lists them); an empty list: none. */
  readonly deliveryIds?: readonly (string | number)[];
  /**
   * Only rows whose event's topic (its name) is one of these: names, and prefix patterns
   * ending in one `*` (`'library.*'`, whose `_` and `%` are plain characters), as a
   * relay's `topics` take them. An empty list requeues nothing.
   * @defaultValue every topic
   */
  readonly topics?: readonly string[];
  /** Only rows of this tenant's events (`settings.tenancy: 'column'`). @defaultValue every tenant's */
  readonly tenant?: string;
  /**
   * Only rows of events whose declared columns hold these values (`{ order_id: 42 }`;
   * every one named must match, `null` for none), resolved to those events once, at the
   * start. @defaultValue every event's
   */
  readonly columns?: Readonly<Record<string, EventColumnValue>>;
  /** At most this many rows. @defaultValue every dead row in scope */
  readonly limit?: number;
  /**
   * Count the dead rows in scope (at most `limit`) and requeue nothing: the total of the
   * CLI's progress bar, or a look before the act.
   */
  readonly dryRun?: boolean;
  /** Told after each chunk (its own transaction) commits. */
  readonly onBatch?: (batch: RequeueBatch) => void;
  /**
   * The transaction to join: every chunk then runs in it, so the requeue commits with
   * whatever else the caller writes there (the console's audit row) or not at all, and
   * `onBatch` is told each chunk as it is written rather than committed. Without it, the one
   * Sequelize's CLS carries; with neither, each chunk its own short transaction.
   */
  readonly transaction?: Transaction | null;
}

/** One chunk of {@link Outbox.requeueDead}, as `onBatch` is told it. */
export interface RequeueBatch {
  /** Rows this chunk requeued. */
  readonly requeued: number;
  /** Rows requeued so far, this chunk's included. */
  readonly totalRequeued: number;
}

/** `outbox.requeueDead()`: see the module comment. Returns how many rows were requeued. */
export async function requeueDead(rt: Runtime, options: RequeueDeadOptions = {}): Promise<number> {
  const where = 'requeueDead()';
  const equal = columnsOption(rt.config, options.columns, where);
  const filter: DeadFilter = {
    receiverKey: receiverKeyOption(options.receiverKey, where),
    deliveryIds:
      options.deliveryIds === undefined ? undefined : deliveryIdList(options.deliveryIds, where),
    topics: topicsOption(options.topics, where),
    tenants: tenantList(tenantOption(rt.config, options.tenant, where)),
    events: await eventsOfColumns(rt, equal),
  };
  const limit = limitOption(options.limit, where);
  if (filter.deliveryIds?.length === 0 || filter.topics?.length === 0) return 0;
  if (options.dryRun) {
    return rt.store.countDeadDeliveries(filter, limit ?? Number.MAX_SAFE_INTEGER);
  }
  const chunk = rt.config.settings.batchSize;
  let requeued = 0;
  for (;;) {
    const want = limit === undefined ? chunk : Math.min(chunk, limit - requeued);
    if (want <= 0) break;
    const step = await inOperationTransaction(rt, options.transaction, async (transaction) => {
      const ids = await rt.store.deadDeliveryIds(filter, want, transaction);
      if (ids.length === 0) return { found: 0, requeued: 0 };
      const events = await rt.store.lockEvents({ deliveryIds: ids }, transaction);
      const n = await rt.store.requeueDeliveries(ids, rt.clock(), transaction);
      // Owed again: wake the relays once this chunk commits (src/ops/wake-relays.ts).
      if (n > 0)
        await wakeRelaysOnCommit(
          rt,
          transaction,
          events.map((e) => e.name),
        );
      return { found: ids.length, requeued: n };
    });
    requeued += step.requeued;
    if (step.requeued > 0) options.onBatch?.({ requeued: step.requeued, totalRequeued: requeued });
    if (step.found < want) break;
  }
  return requeued;
}

/** One tenant as the store's filter takes it: a list of it, or no filter. */
const tenantList = (tenant: string | undefined): string[] | undefined =>
  tenant === undefined ? undefined : [tenant];

/**
 * `topics`: undefined, or an array of topic names and `prefix*` patterns.
 * @throws {ValidationError} naming an entry that is neither.
 */
function topicsOption(topics: unknown, where: string): string[] | undefined {
  if (topics === undefined) return undefined;
  if (!Array.isArray(topics)) {
    throw new ValidationError(
      `${where}: topics must be an array of topic names and prefix patterns; got ${describe(topics)}`,
      { path: 'topics' },
    );
  }
  return topics.map((topic: unknown, i) => {
    if (typeof topic !== 'string' || topic === '') {
      throw new ValidationError(
        `${where}: topics[${i}] must be a topic name or a prefix pattern such as "library.*"; got ${describe(topic)}`,
        { path: `topics[${i}]` },
      );
    }
    const problem =
      topic.includes('*') || topic.includes('?') ? topicPatternProblem(topic) : undefined;
    if (problem)
      throw new ValidationError(`${where}: topics[${i}] ${problem}`, { path: `topics[${i}]` });
    return topic;
  });
}
