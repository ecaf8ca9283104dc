import type { Transaction } from 'sequelize';
import { withCause } from '../scope/caused-by.js';
import { rowlessContext } from './event-view.js';
import type { FiredEvent, PlannedEvent } from './types.js';

/**
 * Between steps 3 and 4: `inline` receivers run in the caller's transaction, in firing
 * order, once per event this call wrote (never for a duplicate, nor a suppressed event).
 * A throw propagates and so aborts the transaction — that is what `inline` is for.
 *
 * Each runs inside `causedBy(event)`, so an event it fires records this one as its parent
 * and carries on its chain's correlation id.
 */
export async function runInlineReceivers(
  planned: readonly PlannedEvent[],
  fired: readonly FiredEvent[],
  transaction: Transaction,
): Promise<void> {
  for (let i = 0; i < planned.length; i++) {
    const event = fired[i];
    if (event.duplicate || event.suppressed !== null) continue;
    for (const receiver of planned[i].route.inline) {
      await withCause(event, () =>
        receiver.handle!(event, rowlessContext(receiver.key, transaction, event.tenant ?? null)),
      );
    }
  }
}
