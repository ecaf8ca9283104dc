import { Transaction } from 'sequelize';
import type { ResolvedReceiver } from '../declare/define-outbox.js';
import type { DeliveryStatus, OutboxEvent } from '../declare/types.js';
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, ClaimToken, Outcome } from '../storage/store.js';
import { decodeEvent, errorText, failureOutcome, withTimeout } from './attempt.js';

/** What delivering one claimed batch did. */
export interface BatchReport {
  /** Outcomes recorded, by status (`pending` counts NotYet reschedules). */
  readonly counts: Partial<Record<DeliveryStatus, number>>;
  /** Rows handed back unstarted because the relay was asked to stop. */
  readonly handedBack: number;
  /** Rows whose claim was lost to another worker before their outcome could be recorded. */
  readonly lost: number;
  /** Ids of the rows attempted. */
  readonly attemptedIds: readonly string[];
  /** Ids of rows a receiver rescheduled with NotYet (a pass must not claim them straight back). */
  readonly rescheduledIds: readonly string[];
}

/** How to deliver a batch. */
export interface BatchOptions {
  /** How many attempts run at once. */
  readonly concurrency: number;
  /** Stop starting new attempts once aborted; unstarted rows are handed back. */
  readonly signal?: AbortSignal;
  /** The lease the claim stamped, in seconds; renewed three times per lease while working. */
  readonly leaseSeconds: number;
  /** How to wait between attempts to record the outcomes. @defaultValue a real timer */
  readonly sleep?: (ms: number) => Promise<void>;
}

class LostClaim extends Error {}

interface Task {
  readonly rows: readonly ClaimedDelivery[];
  readonly run: () => Promise<void>;
}

/**
 * Deliver one claimed batch and record every outcome.
 *
 * A *handler* runs inside a transaction that also acknowledges its row, so its database
 * work commits exactly when the delivery is recorded done; a *transport* sends outside any
 * transaction. Every outcome that is not a handler's acknowledgement (transport results,
 * failures, dead letters, orphans) is recorded in ONE statement at the end, a compare-and-set
 * on the claim. While the batch is worked, its lease is renewed three times per lease, so
 * a long batch is not claimed again by another relay. A stop request finishes the
 * attempts in hand and hands the unstarted rows back at once.
 */
export async function deliverBatch(
  rt: Runtime,
  rows: readonly ClaimedDelivery[],
  token: ClaimToken,
  options: BatchOptions,
): Promise<BatchReport> {
  const counts: Partial<Record<DeliveryStatus, number>> = {};
  const count = (status: DeliveryStatus, n = 1) => {
    counts[status] = (counts[status] ?? 0) + n;
  };
  const outcomes: Outcome[] = [];
  const settled = new Set<string>();
  const attempted: string[] = [];
  const failures: { outcome: Outcome; row: ClaimedDelivery; receiver: ResolvedReceiver }[] = [];
  let lost = 0;

  // Lease renewal: rows not yet settled keep their lease while the batch is worked.
  const leaseMs = options.leaseSeconds * 1000;
  const renewal = setInterval(
    () => {
      const open = rows.filter((r) => !settled.has(r.id)).map((r) => r.id);
      if (open.length === 0) return;
      rt.store.renewLeases(open, token, new Date(rt.clock().getTime() + leaseMs)).catch((error) => {
        rt.logger.warn('could not renew the lease of a batch; it may be delivered again', {
          error,
        });
        rt.events.emit('relay:error', { error, during: 'renew' });
      });
    },
    Math.max(50, leaseMs / 3),
  );
  renewal.unref();

  const fail = (row: ClaimedDelivery, receiver: ResolvedReceiver | undefined, error: unknown) => {
    const outcome = failureOutcome(rt, row, receiver, error, rt.clock());
    outcomes.push(outcome);
    if (receiver && (outcome.status === 'failed' || outcome.status === 'dead'))
      failures.push({ outcome, row, receiver });
  };
  const succeed = (row: ClaimedDelivery) => {
    outcomes.push({
      id: row.id,
      status: 'succeeded',
      attempts: row.attempts + 1,
      availableAt: null,
      lastError: null,
      completedAt: rt.clock(),
    });
  };

  const tasks: Task[] = [];
  const transportRows = new Map<ResolvedReceiver, { row: ClaimedDelivery; event: OutboxEvent }[]>();
  for (const row of rows) {
    const receiver = rt.config.receiver(row.receiverKey);
    if (receiver?.mode !== 'durable') {
      outcomes.push({
        id: row.id,
        status: 'orphaned',
        attempts: row.attempts,
        availableAt: null,
        lastError: `receiver ${row.receiverKey} is not declared as a durable receiver`,
        completedAt: rt.clock(),
      });
      continue;
    }
    let event: OutboxEvent;
    try {
      event = decodeEvent(rt, row);
    } catch (error) {
      attempted.push(row.id);
      fail(row, receiver, error);
      continue;
    }
    if (receiver.kind === 'handler') {
      tasks.push({ rows: [row], run: () => runHandler(row, receiver, event) });
    } else {
      const list = transportRows.get(receiver) ?? [];
      list.push({ row, event });
      transportRows.set(receiver, list);
    }
  }
  for (const [receiver, list] of transportRows) {
    const delivery = receiver.delivery!;
    if (delivery.deliverBatch) {
      tasks.push({ rows: list.map((x) => x.row), run: () => runTransportBatch(receiver, list) });
    } else {
      for (const item of list)
        tasks.push({
          rows: [item.row],
          run: () => runTransportOne(receiver, item.row, item.event),
        });
    }
  }

  const timeoutOf = (receiver: ResolvedReceiver) =>
    receiver.timeoutSeconds ?? rt.config.settings.deliveryTimeoutSeconds;
  const txOptions = rt.store.dialect === 'sqlite' ? { type: Transaction.TYPES.IMMEDIATE } : {};

  async function runHandler(row: ClaimedDelivery, receiver: ResolvedReceiver, event: OutboxEvent) {
    attempted.push(row.id);
    try {
      await rt.sequelize.transaction(txOptions, async (transaction) => {
        await withTimeout(
          Promise.resolve(
            receiver.handle!(event, {
              receiverKey: receiver.key,
              deliveryId: row.id,
              attempt: row.attempts + 1,
              target: row.target,
              transaction,
              signal: options.signal,
            }),
          ),
          timeoutOf(receiver),
          `receiver ${receiver.key}`,
        );
        const ok = await rt.store.acknowledge(row.id, token, rt.clock(), transaction);
        if (!ok) throw new LostClaim();
      });
      settled.add(row.id);
      count('succeeded');
      rt.events.emit('relay:delivered', {
        deliveryId: row.id,
        receiverKey: receiver.key,
        eventName: event.name,
        attempt: row.attempts + 1,
        delayMs: rt.clock().getTime() - event.recordedAt.getTime(),
      });
    } catch (error) {
      if (error instanceof LostClaim) {
        settled.add(row.id);
        lost += 1;
        rt.logger.warn(
          `delivery ${row.id} (${receiver.key}) lost its claim to another worker; its work was rolled back`,
        );
        return;
      }
      fail(row, receiver, error);
    }
  }

  async function runTransportOne(
    receiver: ResolvedReceiver,
    row: ClaimedDelivery,
    event: OutboxEvent,
  ) {
    attempted.push(row.id);
    try {
      await withTimeout(
        receiver.delivery!.deliver!(event, {
          receiverKey: receiver.key,
          deliveryId: row.id,
          attempt: row.attempts + 1,
          target: row.target,
          signal: options.signal,
        }),
        timeoutOf(receiver),
        `receiver ${receiver.key}`,
      );
      succeed(row);
    } catch (error) {
      fail(row, receiver, error);
    }
  }

  async function runTransportBatch(
    receiver: ResolvedReceiver,
    list: { row: ClaimedDelivery; event: OutboxEvent }[],
  ) {
    for (const { row } of list) attempted.push(row.id);
    let results: ReadonlyArray<unknown> | undefined;
    try {
      results = await withTimeout(
        receiver.delivery!.deliverBatch!(list.map((x) => x.event)),
        timeoutOf(receiver),
        `receiver ${receiver.key}`,
      );
    } catch (error) {
      for (const { row } of list) fail(row, receiver, error);
      return;
    }
    list.forEach(({ row }, i) => {
      const result = results?.[i];
      if (result === undefined || result === null) succeed(row);
      else fail(row, receiver, result);
    });
  }

  // Run the tasks, `concurrency` at a time; stop starting new ones once asked to stop.
  const unstarted: ClaimedDelivery[] = [];
  // Rows whose task threw: a fault of the relay's own (a receiver's failure is an outcome,
  // never a throw). They are handed back like unstarted rows, and the rest of the batch
  // goes on; one row's fault must not strand the others until their lease lapses.
  const faulted = new Set<string>();
  let next = 0;
  const limit = rt.store.dialect === 'sqlite' ? 1 : Math.max(1, options.concurrency);
  const lane = async () => {
    while (next < tasks.length) {
      const task = tasks[next++];
      if (options.signal?.aborted) {
        unstarted.push(...task.rows);
        continue;
      }
      try {
        await task.run();
      } catch (error) {
        for (const row of task.rows) faulted.add(row.id);
        rt.logger.error(
          `delivering ${task.rows.map((r) => `${r.id} (${r.receiverKey})`).join(', ')} failed inside the relay; handed back`,
          { error: errorText(error) },
        );
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, lane));
  } finally {
    clearInterval(renewal);
  }
  if (faulted.size > 0) {
    for (let i = outcomes.length - 1; i >= 0; i--)
      if (faulted.has(outcomes[i].id)) outcomes.splice(i, 1);
    for (let i = failures.length - 1; i >= 0; i--)
      if (faulted.has(failures[i].row.id)) failures.splice(i, 1);
  }

  // Record every outcome in one statement. Recorded even when the relay is stopping.
  for (const o of outcomes) settled.add(o.id);
  const written =
    outcomes.length > 0 ? await recordWithRetry(rt, outcomes, token, options.sleep) : 0;
  // Only a verdict that was written is reported: a worker whose claim was lost (its lease
  // lapsed and another worker took the rows) must not tell observers, onFailure hooks or
  // its report about outcomes the compare-and-set refused. The rows of one batch share
  // one claim and one lease, so they are lost together; when only some are (a mixed
  // count), which ones cannot be told apart and all are reported.
  let recorded: readonly Outcome[] = outcomes;
  if (written === 'unrecorded') {
    recorded = [];
  } else if (written < outcomes.length) {
    lost += outcomes.length - written;
    rt.logger.warn(
      `${outcomes.length - written} of ${outcomes.length} outcomes were not recorded: their claim was lost to another worker (the lease lapsed)`,
    );
    if (written === 0) recorded = [];
  }
  for (const o of recorded) count(o.status);
  const handBack = [...unstarted.map((r) => r.id), ...faulted];
  if (handBack.length > 0) {
    await rt.store.release(handBack, token, rt.clock()).catch((error) => {
      rt.logger.warn('could not hand back unstarted rows; they return when their lease lapses', {
        error,
      });
      rt.events.emit('relay:error', { error, during: 'release' });
    });
  }

  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const o of recorded) {
    const row = byId.get(o.id)!;
    if (o.status === 'succeeded') {
      rt.events.emit('relay:delivered', {
        deliveryId: o.id,
        receiverKey: row.receiverKey,
        eventName: row.event.name,
        attempt: o.attempts,
        delayMs: rt.clock().getTime() - row.event.recordedAt.getTime(),
      });
    } else if (o.status === 'failed') {
      rt.logger.warn(
        `delivery ${o.id} to ${row.receiverKey} failed (attempt ${o.attempts} of ${row.maxAttempts}); retrying at ${o.availableAt?.toISOString()}`,
        { error: o.lastError },
      );
      rt.events.emit('relay:failed', {
        deliveryId: o.id,
        receiverKey: row.receiverKey,
        eventName: row.event.name,
        attempt: o.attempts,
        error: o.lastError ?? '',
        nextAttemptAt: o.availableAt!,
      });
    } else if (o.status === 'dead') {
      rt.logger.error(
        `delivery ${o.id} to ${row.receiverKey} is dead-lettered after attempt ${o.attempts}`,
        { error: o.lastError },
      );
      rt.events.emit('relay:deadLettered', {
        deliveryId: o.id,
        receiverKey: row.receiverKey,
        eventName: row.event.name,
        attempt: o.attempts,
        error: o.lastError ?? '',
      });
    } else if (o.status === 'orphaned') {
      rt.logger.warn(
        `delivery ${o.id} names receiver ${row.receiverKey}, which is not declared; recorded orphaned`,
      );
      rt.events.emit('relay:orphaned', {
        deliveryId: o.id,
        receiverKey: row.receiverKey,
        eventName: row.event.name,
      });
    }
  }
  const reported = new Set(recorded);
  for (const { outcome, row, receiver } of failures) {
    if (!receiver.onFailure || !reported.has(outcome)) continue;
    try {
      await receiver.onFailure({
        receiverKey: receiver.key,
        deliveryId: row.id,
        eventId: row.event.uuid,
        eventName: row.event.name,
        target: row.target,
        attempt: outcome.attempts,
        status: outcome.status as 'failed' | 'dead',
        error: outcome.lastError ?? '',
      });
    } catch (error) {
      rt.logger.error(`onFailure of ${receiver.key} threw; ignored`, { error: errorText(error) });
    }
  }
  return {
    counts,
    handedBack: unstarted.length,
    lost,
    attemptedIds: attempted,
    rescheduledIds: outcomes.filter((o) => o.status === 'pending').map((o) => o.id),
  };
}

/**
 * Record outcomes, retrying a failed write a few times: losing the record only means the
 * rows are delivered again when their lease lapses (at least once), but it is worth a try.
 * Returns how many rows the compare-and-set changed, or `'unrecorded'` when it gave up.
 */
async function recordWithRetry(
  rt: Runtime,
  outcomes: readonly Outcome[],
  token: ClaimToken,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
): Promise<number | 'unrecorded'> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await rt.store.recordOutcomes(outcomes, token);
    } catch (error) {
      rt.events.emit('relay:error', { error, during: 'record' });
      if (attempt >= 5) {
        rt.logger.error(
          "could not record a batch's outcomes; the rows will be delivered again when their lease lapses",
          { error },
        );
        return 'unrecorded';
      }
      await sleep(100 * 2 ** attempt);
    }
  }
}
