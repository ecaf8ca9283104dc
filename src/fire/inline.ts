import type { Transaction } from 'sequelize';
import type { FiredEvent, PlannedEvent } from './types.js';

/**
 * Between steps 3 and 4: `inline` receivers run in the caller's transaction, in firing
 * order, once per event this call wrote (never for a duplicate). A throw propagates and so
 * aborts the transaction — that is what `inline` is for.
 */
export async function runInlineReceivers(
  planned: readonly PlannedEvent[],
  fired: readonly FiredEvent[],
  transaction: Transaction,
): Promise<void> {
  for (let i = 0; i < planned.length; i++) {
    if (fired[i].duplicate) continue;
    for (const receiver of planned[i].route.inline) {
      await receiver.handle!(fired[i], {
        receiverKey: receiver.key,
        deliveryId: null,
        attempt: 1,
        target: '',
        dueAt: null,
        transaction,
      });
    }
  }
}
