/**
 * The hand-off of a `site: 'task'` receiver's rows to the outbox's task backend (the
 * domain-events reference's `site="task"` and `TaskBackend`): the relay has claimed them
 * as always; here each row's lease is extended to its receiver's `leaseSeconds`, and its
 * claim is enqueued. Nothing is recorded: the task's worker takes the row under exactly
 * that claim and records the attempt (`deliverOne(id, claim)`). A hand-off the queue
 * loses (an enqueue that fails, a queue that drops it) costs nothing but time: the row's
 * lease lapses, a relay reclaims it and hands it off again under a new claim, and a late
 * copy of the old message finds its claim gone.
 */
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, ClaimToken } from '../storage/store.js';
import type { TaskHandOff } from '../tasks/task-backend.js';
import { receiverLeaseSeconds } from './claim-lease.js';
import type { LaneControl } from './lanes.js';
import type { LeaseKeeper } from './lease-keeper.js';
import { deliveryLogFields } from './log-fields.js';
import type { HandOff } from './plan-batch.js';

/** What handing a batch's task rows off came to. */
export interface HandOffRun {
  /** Rows whose hand-off was tried (enqueued, or lost to a failed enqueue): left to the task. */
  readonly tried: readonly ClaimedDelivery[];
  /** How many of them the backend accepted. */
  readonly enqueued: number;
  /** Rows not handed off (a stop, a lane set aside): handed back like unstarted rows. */
  readonly unstarted: readonly ClaimedDelivery[];
}

/** A batch without task rows. */
export const NO_HAND_OFF: HandOffRun = Object.freeze({ tried: [], enqueued: 0, unstarted: [] });

/**
 * Hand the rows off: settle them in the lease keeper (the task's lease is not the batch's
 * to renew), extend each to its receiver's lease (one statement per lease length), then
 * enqueue each claim. A row whose extension found the claim gone is not enqueued. One at
 * a time on a single-writer database (a backend may run the task inside the enqueue, as
 * a test's inline backend does), else all at once.
 */
export async function handOffRows(
  rt: Runtime,
  handOffs: readonly HandOff[],
  token: ClaimToken,
  lease: LeaseKeeper,
  options: { readonly stop?: AbortSignal; readonly lanes?: LaneControl },
): Promise<HandOffRun> {
  const backend = rt.taskBackend;
  const unstarted: ClaimedDelivery[] = [];
  const going: HandOff[] = [];
  for (const h of handOffs) {
    if (backend === undefined || options.stop?.aborted || options.lanes?.setAside(h.receiver.lane))
      unstarted.push(h.row);
    else going.push(h);
  }
  if (backend === undefined && handOffs.length > 0) {
    // createOutbox refuses a task receiver without a backend; a defect if it happens.
    rt.logger.error(
      `no task backend to hand ${handOffs.length} task row(s) to (receiver ${handOffs[0].receiver.key}); handed back`,
    );
  }
  if (going.length === 0) return { tried: [], enqueued: 0, unstarted };
  lease.settle(going.map((h) => h.row.id));

  // Each row to its receiver's lease, from now: one statement per lease length.
  const byLease = new Map<number, HandOff[]>();
  for (const h of going) {
    const seconds = receiverLeaseSeconds(rt.config, h.receiver);
    const group = byLease.get(seconds);
    if (group) group.push(h);
    else byLease.set(seconds, [h]);
  }
  const tried: HandOff[] = [];
  for (const [seconds, group] of byLease) {
    const until = new Date(rt.nowMs() + seconds * 1000);
    try {
      const extended = await rt.store.renewLeases(
        group.map((h) => h.row.id),
        token,
        until,
      );
      // None extended: the claim is gone (its lease lapsed, another worker has the rows).
      if (extended > 0) tried.push(...group);
    } catch (error) {
      // The claim's own lease still stands: hand off under it; at worst the task finds it
      // lapsed and the row is reclaimed.
      rt.logger.warn(
        `could not extend the lease of ${group.length} task row(s) before handing them off; handing off under the claim's lease`,
        { error },
      );
      rt.events.emit('relay:error', { error, during: 'renew' });
      tried.push(...group);
    }
  }

  const claimedBy = token.workerId;
  const claimedAt = token.claimedAt.toISOString();
  let enqueued = 0;
  const enqueue = async (h: HandOff): Promise<void> => {
    const handOff: TaskHandOff = { deliveryId: h.row.id, claimedBy, claimedAt };
    try {
      await backend!.enqueue(handOff);
      enqueued += 1;
      if (rt.events.listens('relay:handedOff')) {
        rt.events.emit('relay:handedOff', {
          deliveryId: h.row.id,
          receiverKey: h.row.receiverKey,
          eventName: h.row.event.name,
          taskBackend: backend!.name,
        });
      }
    } catch (error) {
      rt.logger.warn(
        `task backend ${backend!.name} could not enqueue delivery ${h.row.id} (${h.receiver.key}); it is handed off again when its lease lapses`,
        { ...deliveryLogFields(h.row), error },
      );
      rt.events.emit('relay:error', { error, during: 'handOff' });
    }
  };
  if (rt.store.capabilities.writers === 'one') {
    for (const h of tried) await enqueue(h);
  } else {
    await Promise.all(tried.map(enqueue));
  }
  return { tried: tried.map((h) => h.row), enqueued, unstarted };
}
