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

/** A batch's results, sorted by what happens to them next. */
export interface SortedResults {
  /** Verdicts to record (and, once recorded, to report). */
  readonly verdicts: readonly {
    readonly row: ClaimedDelivery;
    readonly outcome: Outcome;
    readonly receiver: ResolvedReceiver | undefined;
    readonly error?: unknown;
  }[];
  /** Rows to record as handed back, no attempt spent. */
  readonly handBacks: readonly Extract<AttemptResult, { kind: 'handBack' }>[];
  /** Handler deliveries already committed with their acknowledgement. */
  readonly acknowledged: number;
  /** Rows whose claim was lost before their verdict could be written. */
  readonly lost: number;
}

/**
 * Sort the results of a batch's attempts (and the rows its plan settled) by what the
 * record step does with them.
 */
export function sortResults(
  settled: readonly {
    readonly row: ClaimedDelivery;
    readonly outcome: Outcome;
    readonly receiver: ResolvedReceiver | undefined;
  }[],
  results: readonly AttemptResult[],
): SortedResults {
  const verdicts: SortedResults['verdicts'][number][] = [...settled];
  const handBacks: SortedResults['handBacks'][number][] = [];
  let acknowledged = 0;
  let lost = 0;
  for (const r of results) {
    if (r.kind === 'outcome') verdicts.push(r);
    else if (r.kind === 'handBack') handBacks.push(r);
    else if (r.kind === 'acknowledged') acknowledged += 1;
    else lost += 1;
  }
  return { verdicts, handBacks, acknowledged, lost };
}
