import { decodeEvent } from '../codec/decode-event.js';
import type { ResolvedReceiver } from '../declare/define-outbox.js';
import type { OutboxEvent } from '../declare/types.js';
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, Outcome } from '../storage/store.js';
import { failureOutcome, orphanOutcome } from './attempt.js';

/** One claimed row with its decoded event. */
export interface PlannedItem {
  readonly row: ClaimedDelivery;
  readonly event: OutboxEvent;
}

/** A handler attempt: one row, run in a transaction that also acknowledges it. */
export interface HandlerTask {
  readonly kind: 'handler';
  readonly receiver: ResolvedReceiver;
  readonly item: PlannedItem;
}

/**
 * A transport attempt: one call of `deliverBatch` with every row of this receiver in the
 * batch, or one call of `deliver` with one row.
 */
export interface TransportTask {
  readonly kind: 'transport';
  readonly receiver: ResolvedReceiver;
  readonly items: readonly PlannedItem[];
  readonly batched: boolean;
}

/** One unit of work of a batch. */
export type Task = HandlerTask | TransportTask;

/** A row settled while planning, before any receiver ran. */
export interface PlannedOutcome {
  readonly row: ClaimedDelivery;
  readonly outcome: Outcome;
  /** The receiver, when the row failed for a declared one (its `onFailure` is told). */
  readonly receiver: ResolvedReceiver | undefined;
  /** Whether an attempt was made (a payload that does not decode counts as one). */
  readonly attempted: boolean;
}

/**
 * A row of a `site: 'task'` receiver, to hand to the task backend under the batch's claim
 * rather than run here (not decoded: the task's worker decodes it, as a relay would).
 */
export interface HandOff {
  readonly row: ClaimedDelivery;
  readonly receiver: ResolvedReceiver;
}

/** A batch, planned: the tasks to run, the rows to hand off, and the rows settled without running anything. */
export interface BatchPlan {
  readonly tasks: readonly Task[];
  readonly handOffs: readonly HandOff[];
  readonly settled: readonly PlannedOutcome[];
}

/** The tasks' rows, in task order. */
export function rowsOf(task: Task): readonly ClaimedDelivery[] {
  return task.kind === 'handler' ? [task.item.row] : task.items.map((i) => i.row);
}

/**
 * Turn claimed rows into tasks: one per handler row, one per transport and its rows (or
 * one per row for a transport without `deliverBatch`), in claim order. A row whose receiver
 * is no longer declared durable is settled `orphaned`; one whose payload no longer decodes
 * is an ordinary failed attempt of its receiver (the one decoder's `PayloadDecodeError`).
 * A row of a `site: 'task'` receiver is a {@link HandOff}, unless `runTaskRows` (the task
 * worker's own `deliverOne`, which runs the row it took here).
 */
export function planBatch(
  rt: Runtime,
  rows: readonly ClaimedDelivery[],
  runTaskRows = false,
): BatchPlan {
  const settled: PlannedOutcome[] = [];
  let handOffs: HandOff[] | undefined;
  const handlers: Task[] = [];
  const transports = new Map<ResolvedReceiver, PlannedItem[]>();
  let lastReceiver: ResolvedReceiver | undefined;
  let lastItems: PlannedItem[] | undefined;
  for (const row of rows) {
    const receiver = rt.config.receiver(row.receiverKey);
    if (receiver?.mode !== 'durable') {
      settled.push({
        row,
        outcome: orphanOutcome(row, rt.clock()),
        receiver: undefined,
        attempted: false,
      });
      continue;
    }
    if (receiver.site === 'task' && !runTaskRows) {
      handOffs ??= [];
      handOffs.push({ row, receiver });
      continue;
    }
    let event: OutboxEvent;
    try {
      event = decodeEvent(rt.config, row.event);
    } catch (error) {
      settled.push({
        row,
        outcome: failureOutcome(rt, row, receiver, error, rt.clock()),
        receiver,
        attempted: true,
      });
      continue;
    }
    if (receiver.kind === 'handler') {
      handlers.push({ kind: 'handler', receiver, item: { row, event } });
    } else {
      // A batch's rows mostly share a receiver: the last one's list, without a lookup.
      let items = receiver === lastReceiver ? lastItems : transports.get(receiver);
      if (items === undefined) {
        items = [];
        transports.set(receiver, items);
      }
      items.push({ row, event });
      lastReceiver = receiver;
      lastItems = items;
    }
  }
  const tasks: Task[] = [...handlers];
  for (const [receiver, items] of transports) {
    if (receiver.delivery?.deliverBatch) {
      tasks.push({ kind: 'transport', receiver, items, batched: true });
    } else {
      for (const item of items)
        tasks.push({ kind: 'transport', receiver, items: [item], batched: false });
    }
  }
  return { tasks, handOffs: handOffs ?? NO_HAND_OFFS, settled };
}

const NO_HAND_OFFS: readonly HandOff[] = Object.freeze([]);
