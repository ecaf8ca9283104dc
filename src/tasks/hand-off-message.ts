/**
 * The hand-off as a queue carries it, in both directions: checked when a worker reads it
 * back (a job of another shape on the queue fails loudly, naming what it got), and
 * collected into one insert per turn of the event loop when the relay hands a batch off.
 */
import { ValidationError } from '../errors/outbox-error.js';
import type { TaskHandOff } from './task-backend.js';

/** Read a job's data back as a {@link TaskHandOff}, or throw naming the job. */
export function readHandOff(data: unknown, job: string): TaskHandOff {
  const d = data as Partial<Record<keyof TaskHandOff, unknown>> | null;
  if (
    typeof d?.deliveryId !== 'string' ||
    typeof d.claimedBy !== 'string' ||
    typeof d.claimedAt !== 'string'
  ) {
    throw new ValidationError(
      `task job ${job} is not an outbox hand-off: its data must be { deliveryId, claimedBy, claimedAt }, three strings (got ${JSON.stringify(data)?.slice(0, 200)})`,
      { path: 'data' },
    );
  }
  return { deliveryId: d.deliveryId, claimedBy: d.claimedBy, claimedAt: d.claimedAt };
}

/**
 * Collect the items handed to `add` during one turn of the event loop and send them with
 * ONE call of `flush` (one INSERT, one pipeline): the relay hands a batch's rows off all at
 * once, one `enqueue` each. Each `add` settles with its flush.
 */
export function batcher<T>(
  flush: (items: readonly T[]) => Promise<void>,
): (item: T) => Promise<void> {
  let pending: { item: T; resolve: () => void; reject: (error: unknown) => void }[] | undefined;
  const run = (): void => {
    const taken = pending!;
    pending = undefined;
    flush(taken.map((p) => p.item)).then(
      () => {
        for (const p of taken) p.resolve();
      },
      (error: unknown) => {
        for (const p of taken) p.reject(error);
      },
    );
  };
  return (item) =>
    new Promise<void>((resolve, reject) => {
      if (pending === undefined) {
        pending = [];
        setImmediate(run);
      }
      pending.push({ item, resolve, reject });
    });
}
