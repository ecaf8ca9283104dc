import type { Transaction } from 'sequelize';
import type { Runtime } from '../runtime.js';
import { withCause } from '../scope/caused-by.js';
import { rootOf } from '../transaction/join.js';
import { whenCommitted } from '../transaction/when-committed.js';
import { rowlessContext } from './event-view.js';
import type { FiredEvent, PlannedEvent } from './types.js';
import type { Inserted } from './write.js';

/**
 * Step 4 of `fire()`: arrange what happens once the firing transaction has really
 * committed (see {@link whenCommitted}) — never for a rollback, a rolled-back savepoint or
 * a failed COMMIT:
 *
 * - the `onCommit` receivers of the events this call wrote, in firing order; best effort,
 *   so a throw is logged and emitted as `fire:onCommitFailed`, never raised;
 * - the first attempt of their `eager` durable receivers (`rt.arrangeEager`, relay/eager.ts);
 * - one wakeup signal per outbox per transaction, naming `topics` (the caller's
 *   {@link freshDurableTopics}), sent after every onCommit receiver. A `notifyInWrite` wakeup
 *   (PostgreSQL `NOTIFY` inside the insert) needs nothing from here.
 *
 * Duplicates of a stored idempotency key arrange nothing: they wrote nothing. Nor do
 * suppressed events: nobody is owed them. Each onCommit receiver runs inside
 * `causedBy(event)`, so what it fires descends from the event.
 */
export function arrangeAfterCommit(
  rt: Runtime,
  planned: readonly PlannedEvent[],
  fired: readonly FiredEvent[],
  transaction: Transaction,
  topics: readonly string[],
): void {
  const fresh = planned.flatMap((p, i) =>
    fired[i].duplicate || fired[i].suppressed !== null ? [] : [{ p, event: fired[i] }],
  );
  if (fresh.length === 0) return;

  const onCommit = fresh.flatMap(({ p, event }) =>
    p.route.onCommit.map((receiver) => ({ receiver, event })),
  );
  if (onCommit.length > 0) {
    whenCommitted(transaction, async () => {
      for (const { receiver, event } of onCommit) {
        try {
          await withCause(event, () =>
            receiver.handle!(event, rowlessContext(receiver.key, undefined, event.tenant ?? null)),
          );
        } catch (error) {
          rt.logger.error(
            `onCommit receiver ${receiver.key} failed for ${event.name}; not retried (onCommit is best effort)`,
            { error },
          );
          rt.events.emit('fire:onCommitFailed', {
            receiverKey: receiver.key,
            eventId: event.id,
            eventName: event.name,
            error,
          });
        }
      }
    });
  }

  // The eager receivers' first attempt, after the onCommit receivers, before the wakeup.
  rt.arrangeEager(rt, planned, fired, transaction);

  if (topics.length > 0) signalWhenCommitted(rt, transaction, topics);
}

/**
 * What the wakeup signal names, read off the insert (so a caller that builds no
 * `FiredEvent`s, `fireUnanswered`, signals the same): the topics of the fresh events —
 * written now, neither a repeated idempotency key nor suppressed — that durable receivers
 * owe, in firing order.
 */
export function freshDurableTopics(planned: readonly PlannedEvent[], inserted: Inserted): string[] {
  const topics: string[] = [];
  let next = 0;
  for (const p of planned) {
    if (p.suppression?.record === false) continue;
    const w = inserted.written[next++];
    if (w?.inserted && p.suppression === null && p.route.durable.length > 0)
      topics.push(p.row.name);
  }
  return topics;
}

/**
 * Coalesce this outbox's signal for the outermost transaction: the first fire in it adds
 * the one `signals`-stage piece that sends; every fire adds a `receivers`-stage piece that
 * contributes its topics if its own savepoint committed. The set lives in this runtime's
 * state, keyed by the outermost transaction, so two outboxes firing in one transaction
 * each signal their own wakeup.
 */
export function signalWhenCommitted(
  rt: Runtime,
  transaction: Transaction,
  topics: readonly string[],
): void {
  const wakeup = rt.wakeup;
  if (!wakeup || wakeup.capabilities?.notifyInWrite) return;
  const root = rootOf(transaction);
  let committed = rt.state.pendingSignals.get(root);
  if (!committed) {
    const collected = new Set<string>();
    committed = collected;
    rt.state.pendingSignals.set(root, collected);
    whenCommitted(
      root,
      () => {
        rt.state.pendingSignals.delete(root);
        if (collected.size === 0) return;
        try {
          wakeup.signal([...collected]);
        } catch (error) {
          rt.logger.warn(`wakeup ${wakeup.name} failed to signal; relays will poll`, { error });
        }
      },
      'signals',
    );
  }
  const into = committed;
  whenCommitted(transaction, () => {
    for (const topic of topics) into.add(topic);
  });
}
