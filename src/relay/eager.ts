import type { Transaction } from 'sequelize';
import type { FiredEvent, PlannedEvent } from '../fire/types.js';
import type { Runtime } from '../runtime.js';
import { whenCommitted } from '../transaction/when-committed.js';
import { claimBatch } from './claim.js';
import { deliverBatch } from './deliver-batch.js';

/**
 * Part of step 4 of `fire()`: the `eager` receivers' first attempt, right after commit, in
 * the firing process — durability at on-commit latency. The row was written with the event,
 * as for any durable receiver, so the relay is the fallback for whatever a process death
 * loses; the price is a duplicate when the process dies mid-receiver, which at-least-once
 * already asks every receiver to tolerate.
 *
 * The attempt goes through the relay's own claim, narrowed to the rows just written, so it
 * is the relay's path in every respect: the claim skips a row held back by an earlier event
 * of its ordering key or already taken by a relay a wakeup reached first, a handler's work
 * commits with its acknowledgement, and a failure is an ordinary failed attempt (retried by
 * the relay after its backoff). It runs whatever the receiver's lane, and before the wakeup
 * is signalled, so a relay woken by this commit finds the row already done.
 *
 * The commit awaits the attempt, as it awaits `onCommit` receivers: when the caller's
 * transaction resolves, the eager delivery has been attempted and recorded. Declare `eager`
 * for receivers that are quick; a slow one holds up the caller for up to its
 * `timeoutSeconds`. A fault of the attempt itself (the database) is logged; the row stays
 * owed and the relay delivers it.
 */
export function arrangeEager(
  rt: Runtime,
  planned: readonly PlannedEvent[],
  fired: readonly FiredEvent[],
  transaction: Transaction,
): void {
  let sequences: string[] | undefined;
  let keys: Set<string> | undefined;
  let rows = 0;
  for (let i = 0; i < planned.length; i++) {
    if (fired[i].duplicate) continue;
    for (const d of planned[i].deliveries) {
      const receiver = rt.config.receiver(d.receiverKey);
      if (!receiver?.eager) continue;
      rows += 1;
      keys ??= new Set();
      keys.add(d.receiverKey);
      sequences ??= [];
      if (sequences[sequences.length - 1] !== fired[i].sequence) sequences.push(fired[i].sequence);
    }
  }
  if (!sequences || !keys) return;
  const events = sequences;
  const receivers = [...keys];
  whenCommitted(transaction, () => attemptEagerly(rt, events, receivers, rows));
}

/**
 * Claim the eager receivers' rows of these events (one claim statement, narrowed to the
 * events and the receivers), and deliver them; never throws.
 */
async function attemptEagerly(
  rt: Runtime,
  sequences: readonly string[],
  receiverKeys: readonly string[],
  rows: number,
): Promise<void> {
  try {
    const claim = await claimBatch(rt, {
      workerId: `${rt.processId}:eager`,
      now: rt.clock(),
      limit: rows,
      onlyEvents: sequences,
      receiverKeys,
    });
    if (claim.rows.length === 0) return;
    await deliverBatch(rt, claim.rows, claim.token, {
      concurrency: 1,
      leaseSeconds: claim.leaseSeconds,
      leaseUntil: claim.leaseUntil,
    });
  } catch (error) {
    rt.logger.warn('an eager attempt failed before it ran; the relay will deliver the rows', {
      error,
    });
  }
}
