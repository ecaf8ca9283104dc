import type { Transaction } from 'sequelize';
import { signalWhenCommitted } from '../fire/after-commit.js';
import type { Runtime } from '../runtime.js';

/**
 * Tell idle relays that an operation (replay, requeue) made rows owed, naming the topics of
 * their events, so a relay waiting out a long poll claims them at once — the signal
 * `fire()` sends, on the same terms: only once the operation's outermost transaction has
 * really committed (a caller's transaction it joined included), never for a rollback.
 *
 * - a wakeup that signals after commit (in-process, a broker's): its `signal()`, through
 *   `fire()`'s coalescing (src/fire/after-commit.ts), so an operation joined to a
 *   transaction that also fires sends one signal for both;
 * - a `notifyInWrite` wakeup (PostgreSQL LISTEN/NOTIFY): a NOTIFY per topic queued in the
 *   operation's transaction, which the server sends on its commit — what reaches a relay
 *   in another process (the CLI's `requeue-dead` and `replay` use this one);
 * - no wakeup: nothing; the relays' poll is the floor.
 */
export async function wakeRelaysOnCommit(
  rt: Runtime,
  transaction: Transaction,
  topics: readonly string[],
): Promise<void> {
  const wakeup = rt.wakeup;
  if (!wakeup || topics.length === 0) return;
  const unique = [...new Set(topics)];
  if (wakeup.capabilities?.notifyInWrite) {
    await rt.store.notifyInTransaction?.(unique, transaction);
    return;
  }
  signalWhenCommitted(rt, transaction, unique);
}
