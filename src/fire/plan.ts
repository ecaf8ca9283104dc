import type { Transaction } from 'sequelize';
import type { PlannedEvent, PreparedEvent } from './types.js';

/** What planning may consult: the moment of the fire and the caller's transaction. */
export interface PlanContext {
  /** The moment `fire()` was called: the rows' `available_at`. */
  readonly now: Date;
  /**
   * The caller's transaction, where a receiver's `targets` and `due` callables will run
   * (reading the rows the change just wrote).
   */
  readonly transaction: Transaction;
}

/**
 * Step 2 of `fire()`: the delivery rows each event owes, computed inside the caller's
 * transaction. Today one row per durable receiver, owed at once, with the blank target;
 * this is where fan-out `targets` (one row per target) and `due` times land.
 *
 * A duplicate of a stored idempotency key writes none of these (the store skips them), so
 * planning must not have effects of its own beyond reading.
 */
export async function planDeliveries(
  prepared: readonly PreparedEvent[],
  context: PlanContext,
): Promise<PlannedEvent[]> {
  return prepared.map((p) => ({
    ...p,
    deliveries: p.route.durable.map((receiver) => ({
      receiverKey: receiver.key,
      target: '',
      maxAttempts: receiver.maxAttempts,
      availableAt: context.now,
      dueAt: null,
    })),
  }));
}
