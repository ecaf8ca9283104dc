import type { Transaction } from 'sequelize';
import { type CommitRunner, commitRunnerOf } from '../sequelize/internals.js';
import { finishedOf, parentOf, rootOf } from './join.js';

/**
 * Work to run once a transaction has REALLY committed: the outermost one, and only after
 * its COMMIT succeeded.
 *
 * Sequelize 6's own `afterCommit` is not that, twice over: a savepoint's hooks run when the
 * savepoint is released, though the outer transaction may still roll back; and
 * `Transaction.commit()` runs the hooks in a `finally`, so they run even when the COMMIT
 * itself failed (a deferred constraint, a serialization failure, a lost connection).
 *
 * So the Sequelize instance's `queryInterface.commitTransaction` (which runs the COMMIT of
 * an outermost transaction, and returns at once for a savepoint) is wrapped once per
 * instance, marking a transaction whose COMMIT resolved; the work is kept on the outermost
 * transaction under a symbol (per transaction, never in module state, so any number of
 * outboxes can add to it) and runs from one ordinary `afterCommit` hook, which Sequelize
 * calls in its `finally` — only when the mark is there. Work added inside a savepoint that
 * was then rolled back is dropped: what it reports was rolled back with it. (Wrapping the
 * instance's query interface rather than each transaction keeps `fire()`'s hot path to a
 * property write and an array push.)
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
const COMMITTED = Symbol('outboxkit.committed');
const WATCHED = Symbol('outboxkit.watchesCommits');

type Marked = Transaction & { [WORK]?: CommitWork[]; [COMMITTED]?: true };

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
  const root = rootOf(transaction) as Marked;
  let work = root[WORK];
  if (!work) {
    work = [];
    root[WORK] = work;
    watchCommits(root);
    const queued = work;
    root.afterCommit(() => runCommitted(root, queued));
  }
  work.push({ from: transaction, stage, run });
}

/** Mark each outermost transaction whose COMMIT resolved (once per Sequelize instance). */
function watchCommits(root: Transaction): void {
  const queryInterface: CommitRunner = commitRunnerOf(root);
  if (queryInterface[WATCHED]) return;
  const commit = queryInterface.commitTransaction;
  queryInterface.commitTransaction = async function commitAndMark(transaction, options) {
    const result = await commit.call(this, transaction, options);
    // Only reached when the COMMIT succeeded (a savepoint returns at once, unmarked).
    if (!parentOf(transaction)) (transaction as Marked)[COMMITTED] = true;
    return result;
  };
  queryInterface[WATCHED] = true;
}

/**
 * Mark an outermost transaction committed, for a COMMIT sent without Sequelize's
 * `commitTransaction` (the relay's one-round-trip handler transaction on PostgreSQL).
 * Call it only once that COMMIT succeeded, before the transaction's afterCommit hooks run.
 */
export function markCommitted(transaction: Transaction): void {
  if (!parentOf(transaction)) (transaction as Marked)[COMMITTED] = true;
}

/** The afterCommit hook: nothing unless the COMMIT really succeeded. */
async function runCommitted(root: Marked, work: CommitWork[]): Promise<void> {
  if (!root[COMMITTED]) return; // the COMMIT failed: nothing was committed, nothing runs
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
}

/** Whether the writes of `from` committed with `root`: no savepoint between was rolled back. */
function committedWith(from: Transaction, root: Transaction): boolean {
  for (let t: Transaction | undefined = from; t && t !== root; t = parentOf(t)) {
    if (finishedOf(t) === 'rollback') return false;
  }
  return true;
}
