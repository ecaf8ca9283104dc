/**
 * `outbox.cancelDeliveries(events, options)`: withdraw the owed deliveries of these events,
 * so they never run.
 *
 * The scheduled case is the one this exists for: an offer accepted before its expiry is
 * due, a reminder for an order already paid. A receiver that finds nothing to do and
 * returns is still the answer when the world moved on and nobody said so; this is the
 * answer when the application knows ahead of time, and wants neither the run nor a success
 * recorded for work that was never done.
 *
 * A row is withdrawn if it is unclaimed and owed: `pending` (waiting for its due time or
 * the relay) or `failed` (waiting out its backoff — "never runs" covers its retries). It
 * becomes `cancelled`, a settled status of its own, with `completed_at` set and nothing
 * else touched. A `claimed` row is left alone — a worker may be running the receiver now,
 * and settling it under the worker would record an outcome the receiver contradicts — and
 * counted, so the caller learns how many it could not stop. A settled row (succeeded,
 * dead, orphaned, cancelled) keeps its outcome: a dead letter withdrawn here would leave
 * the dead-letter counts without anyone having read or requeued it.
 *
 * CONCURRENCY: the events are locked first, in primary-key order (the lock replay, requeue
 * and prune share, storage/postgres/event-locks.ts), so a cancel issued while a replay of
 * the event is open waits for it and withdraws what it reopened, and overlapping callers
 * queue rather than deadlock. A relay's claim takes no event lock, so the write itself
 * carries the status predicate: a claim committed first leaves the row claimed.
 */

import type { Transaction } from 'sequelize';
import type { EventColumnValue } from '../declare/event-columns.js';
import type { Runtime } from '../runtime.js';
import {
  columnsOption,
  deliveryIdList,
  type EventIdentity,
  eventUuids,
  missingOf,
  ofColumns,
  ofTenant,
  receiverKeyOption,
  tenantOption,
} from './arguments.js';
import { inOperationTransaction } from './in-transaction.js';

/** Options of {@link Outbox.cancelDeliveries}. */
export interface CancelDeliveriesOptions {
  /**
   * Only this receiver's rows: one event usually drives an immediate reaction and a
   * scheduled one, and only the scheduled one became moot.
   * @defaultValue every receiver's
   */
  readonly receiverKey?: string;
  /**
   * Only these rows (delivery ids), intersected with the events rather than widening them:
   * a stale id list cannot reach another event's work. An empty list cancels nothing.
   * @defaultValue every row of the events
   */
  readonly deliveryIds?: readonly (string | number)[];
  /**
   * Only this tenant's events (`settings.tenancy: 'column'`): an event of another tenant
   * is left untouched and reported among `missing`, as an id naming no event is, so an
   * operator working for one tenant cannot reach another's.
   * @defaultValue every tenant's
   */
  readonly tenant?: string;
  /**
   * Only events whose declared columns hold these values (`{ order_id: 42 }`; every one
   * named must match, `null` for none): another event is left untouched and reported among
   * `missing`, as one of another tenant is. @defaultValue every event
   */
  readonly columns?: Readonly<Record<string, EventColumnValue>>;
  /**
   * The transaction to join, so the cancel commits with the change that made the work moot
   * or not at all. Without it, the one Sequelize's CLS carries; with neither, its own.
   */
  readonly transaction?: Transaction | null;
}

/** What {@link Outbox.cancelDeliveries} did. */
export interface CancelResult {
  /** Rows withdrawn: they will never run. */
  readonly cancelled: number;
  /** Claimed rows in the same scope, left to their worker (it may be running them now). */
  readonly inFlight: number;
  /** The ids given that name no event (never fired, or pruned since), in the order given. */
  readonly missing: readonly string[];
}

/** `outbox.cancelDeliveries()`: see the module comment. Validates before any statement. */
export async function cancelDeliveries(
  rt: Runtime,
  events: readonly EventIdentity[],
  options: CancelDeliveriesOptions = {},
): Promise<CancelResult> {
  const where = 'cancelDeliveries()';
  const uuids = eventUuids(events, where);
  const receiverKey = receiverKeyOption(options.receiverKey, where);
  const tenant = tenantOption(rt.config, options.tenant, where);
  const equal = columnsOption(rt.config, options.columns, where);
  const deliveryIds =
    options.deliveryIds === undefined ? undefined : deliveryIdList(options.deliveryIds, where);
  if (uuids.length === 0) return { cancelled: 0, inFlight: 0, missing: [] };
  const completedAt = rt.clock();
  return inOperationTransaction(rt, options.transaction, async (transaction) => {
    const locked = await ofColumns(
      rt,
      ofTenant(await rt.store.lockEvents({ uuids }, transaction), tenant),
      equal,
      transaction,
    );
    const missing = missingOf(uuids, locked);
    if (locked.length === 0 || deliveryIds?.length === 0)
      return { cancelled: 0, inFlight: 0, missing };
    const counts = await rt.store.cancelDeliveries(
      { eventSequences: locked.map((e) => e.sequence), receiverKey, deliveryIds },
      completedAt,
      transaction,
    );
    return { ...counts, missing };
  });
}
