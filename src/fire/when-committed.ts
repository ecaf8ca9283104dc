import type { Transaction } from 'sequelize';
import { finishedOf, parentOf, rootOf } from './transaction.js';

/**
 * Work to run once a transaction has REALLY committed: the outermost one, and only after
 * its COMMIT succeeded.
 *
 * Sequelize 6's own `afterCommit` is not that, twice over: a savepoint's hooks run when the
 * savepoint is released, though the outer transaction may still roll back; and
 * `Transaction.commit()` runs the hooks in a `finally`, so they run even when the COMMIT
 * itself failed (a deferred constraint, a serialization failure, a lost connection).
 *
 * So the outermost transaction's `commit` is wrapped, once, by an own property; the work
 * is kept on the transaction under a symbol (per transaction, never in module state, so
 * any number of outboxes can add to it) and runs after the original commit resolves. Work
 * added inside a savepoint that was then rolled back is dropped: what it reports was
 * rolled back with it.
 */

/** Which batch a piece of work runs in: every `receivers` piece before any `signals` one. */
export type CommitStage = 'receivers' | 'signals';

interface CommitWork {
  /** The transaction (maybe a savepoint) whose writes the work reports. */
  readonly from: Transaction;
  readonly stage: CommitStage;
  /** MUST NOT THROW: it reports its own failures (a throw here is swallowed). */
  readonly run: () => unknown;
}

const WORK = Symbol('outboxkit.whenCommitted');

type Wrapped = Transaction & { [WORK]?: CommitWork[] };

/**
 * Run `run` once the outermost transaction of `transaction` has committed, unless
 * `transaction` (or a savepoint around it) is rolled back first. The commit awaits it.
 *
 * @param run must not throw; it reports its own failures.
 */
export function whenCommitted(
  transaction: Transaction,
  run: () => unknown,
  stage: CommitStage = 'receivers',
): void {
  workOf(rootOf(transaction)).push({ from: transaction, stage, run });
}

function workOf(root: Wrapped): CommitWork[] {
  const existing = root[WORK];
  if (existing) return existing;
  const work: CommitWork[] = [];
  const commit = root.commit;
  Object.defineProperty(root, WORK, { value: work });
  Object.defineProperty(root, 'commit', {
    configurable: true,
    writable: true,
    value: async function commitThenRun(this: Transaction): Promise<void> {
      // Throws when the COMMIT failed: then nothing was committed and nothing runs.
      await commit.call(root);
      const due = work.splice(0).filter((w) => committedWith(w.from, root));
      for (const stage of ['receivers', 'signals'] as const) {
        for (const w of due) {
          if (w.stage !== stage) continue;
          try {
            await w.run();
          } catch {
            // Each piece reports its own failures; the commit has happened and stands.
          }
        }
      }
    },
  });
  return work;
}

/** Whether the writes of `from` committed with `root`: no savepoint between was rolled back. */
function committedWith(from: Transaction, root: Transaction): boolean {
  for (let t: Transaction | undefined = from; t && t !== root; t = parentOf(t)) {
    if (finishedOf(t) === 'rollback') return false;
  }
  return true;
}
