import type { DeliveryItem, DeliveryResult } from '../declare/types.js';
import { RetryAfter } from '../errors/signals.js';
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery } from '../storage/store.js';
import {
  Attempt,
  AttemptContext,
  failureOutcome,
  handBackOutcome,
  successOutcome,
} from './attempt.js';
import type { AttemptResult } from './attempt-result.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { TransportTask } from './plan-batch.js';

/**
 * Run one transport attempt outside any transaction: `deliverBatch` with every row of the
 * task in one call (one result per item), or `deliver` with its one row. One attempt
 * signal for the call, fired by its time limit (the call then fails as a
 * `DeliveryTimeout`, and the signal asks the client to cancel the send) and by a stop.
 * A throw fails every row of the call.
 */
export async function runTransport(
  rt: Runtime,
  task: TransportTask,
  lease: LeaseKeeper,
  stop: AbortSignal | undefined,
): Promise<AttemptResult[]> {
  const { receiver, items } = task;
  const delivery = receiver.delivery!;
  for (const { row } of items) {
    const extending = lease.beforeStart(row, receiver);
    if (extending) await extending;
  }
  const attempt = new Attempt(rt, receiver, items[0].row, stop);
  let results: readonly (DeliveryResult | undefined)[];
  try {
    if (task.batched) {
      const batch: DeliveryItem[] = items.map((item) => ({
        event: item.event,
        context: new AttemptContext(receiver.key, item.row, attempt),
      }));
      const answered = await attempt.run(delivery.deliverBatch!(batch, { signal: attempt.signal }));
      results = answered ?? items.map(() => SENT);
      if (answered && answered.length !== items.length) {
        const error = new TypeError(
          `${receiver.key}: deliverBatch resolved to ${answered.length} results for ${items.length} items; it must resolve to one per item (or to nothing when all went)`,
        );
        results = items.map(() => ({ status: 'failed', error }));
      }
    } else {
      await attempt.run(
        delivery.deliver!(items[0].event, new AttemptContext(receiver.key, items[0].row, attempt)),
      );
      results = [SENT];
    }
  } catch (error) {
    results = items.map(() => ({ status: 'failed', error }));
  } finally {
    attempt.dispose();
  }
  const now = rt.clock();
  return items.map(({ row }, i) => verdictOf(rt, task, attempt, row, results[i] ?? SENT, now));
}

/** What one item's result records. */
function verdictOf(
  rt: Runtime,
  { receiver }: TransportTask,
  attempt: Attempt,
  row: ClaimedDelivery,
  result: DeliveryResult,
  now: Date,
): AttemptResult {
  if (result.status === 'sent')
    return { kind: 'outcome', row, receiver, outcome: successOutcome(row, now) };
  // The send gave up because the relay is stopping: no attempt spent, handed back.
  if (result.status === 'failed' && attempt.gaveUpOnStop(result.error))
    return { kind: 'handBack', row, outcome: handBackOutcome(row, now), error: result.error };
  const error =
    result.status === 'retryAfter'
      ? new RetryAfter(result.seconds, messageOf(result.error))
      : result.error;
  return {
    kind: 'outcome',
    row,
    receiver,
    outcome: failureOutcome(rt, row, receiver, error, now),
    error,
  };
}

const SENT: DeliveryResult = { status: 'sent' };

function messageOf(error: unknown): string | undefined {
  return error instanceof Error ? error.message : error === undefined ? undefined : String(error);
}
