import type { ResolvedReceiver } from '../declare/define-outbox.js';
import type { ClaimedDelivery, Outcome } from '../storage/store.js';

/**
 * What one row's attempt came to, as a value the batch composes (never a shared list
 * mutated by closures):
 *
 * - `acknowledged`: a handler's work and its acknowledgement committed together.
 * - `outcome`: a verdict to record (a transport's send, a failure, a NotYet).
 * - `handBack`: the database failed under the attempt; recorded as no attempt at all.
 * - `lost`: the claim was lost to another worker before the verdict could be written.
 */
export type AttemptResult =
  | { readonly kind: 'acknowledged'; readonly row: ClaimedDelivery; readonly at: Date }
  | {
      readonly kind: 'outcome';
      readonly row: ClaimedDelivery;
      readonly receiver: ResolvedReceiver;
      readonly outcome: Outcome;
      /** What the receiver threw, when it failed: chained as the `DeliveryError`'s cause. */
      readonly error?: unknown;
    }
  | {
      readonly kind: 'handBack';
      readonly row: ClaimedDelivery;
      readonly outcome: Outcome;
      readonly error: unknown;
    }
  | { readonly kind: 'lost'; readonly row: ClaimedDelivery };
