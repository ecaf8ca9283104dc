/**
 * The transaction around a captured write: one of its own when it is given none, a
 * SAVEPOINT of the one it is given (or CLS carries), so the row and its events commit or
 * roll back together — Sequelize has no hook for a failed write, so a transaction opened in
 * a before hook could never be rolled back.
 *
 * Why a write in the caller's transaction may go without the savepoint. The savepoint is
 * there so that a failure after the row is written undoes that row and leaves the caller's
 * transaction usable (the caller may catch and go on). It costs a statement — a round trip
 * a single `create` feels (bench/capture.ts: 5 statements instead of 4). A write whose
 * model and capture run no code of the user's after its row (no extension, no topic or key
 * function, no inline or scheduling receiver of its topics, no other after-hook, no
 * `include`) can only fail there on outboxkit's own work (a value its attribute's JSON form
 * refuses, a database error on the events' statement). Such a write runs without the
 * savepoint (`unguarded`); should it fail after its row, the transaction is DOOMED (see
 * {@link failedAfterRow}): its commit rolls it back and rejects, so the row never commits
 * without its events — the guarantee is kept, at the price of the caller's other work in
 * that transaction for a failure that is not the user's own code. Only a root transaction
 * goes unguarded: a savepoint someone else made (`findOrCreate`'s, the caller's own) may
 * never be committed or rolled back by anyone, so a write in one keeps its own savepoint.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Sequelize, Transaction } from 'sequelize';
import { OutboxError } from '../errors/outbox-error.js';
import { parentOf, resolveTransaction } from '../transaction/join.js';
import { captureCapabilities } from './capabilities.js';

type Options = Record<string, unknown> & { transaction?: Transaction | null };

/**
 * Whether this call of a wrapped write may run without a savepoint: nothing of the user's
 * runs after its row (see the module's comment). `self` is the model or the instance.
 */
export type Unguarded = (self: unknown, args: readonly unknown[], options: Options) => boolean;

// JUSTIFIED module-level sets and map (here and `queues` below): each is keyed by a
// transaction (or, for `queues`, by a single-writer Sequelize), which outlives any one
// write and is shared by every write in it — what they say is a fact of that transaction
// (opened by a wrapper; an unguarded write running in it; the writes queued on it), not of
// a statement. Weak: an ended transaction takes its entry with it.

/** Transactions (and savepoints) opened by a wrapper: a write inside one opens no other. */
const owned = new WeakSet<object>();
/** The caller's transactions an unguarded write is running in right now (queued: one at a time). */
const unguardedNow = new WeakSet<object>();
/** The transaction of the unguarded write the current async context is inside. */
const insideUnguarded = new AsyncLocalStorage<object>();

/**
 * A write that runs in a transaction of its own when given none, and in a savepoint of the
 * one it is given (or CLS carries): the row and its events commit or roll back together —
 * or, where `unguarded` says nothing of the user's runs after the row, directly in the
 * given root transaction, which a failure after the row dooms.
 *
 * Writes started together are run one after the other where they would share what cannot
 * be shared: the savepoints of one transaction (a connection runs one statement at a time,
 * and savepoints nest: two interleaved would release each other), and on SQLite the
 * transactions the wrapper opens (one writer at a time: a second would fail SQLITE_BUSY).
 * Sequelize's many-to-many `setX`/`addX` start their through model's writes with
 * `Promise.all`. A write started inside another's run on the same transaction (an
 * extension's own write, a hook's) is not queued behind it.
 */
export function inTransaction(
  sequelize: Sequelize,
  original: (...args: unknown[]) => Promise<unknown>,
  at: number,
  unguarded?: Unguarded,
): (...args: unknown[]) => Promise<unknown> {
  const { singleWriter } = captureCapabilities(sequelize);
  return function captured(this: unknown, ...args: unknown[]) {
    const options = (args[at] ?? {}) as Options;
    const given = resolveTransaction(sequelize, options.transaction);
    if (given && owned.has(given)) return original.apply(this, args);
    // Part of an unguarded write on this transaction (`create` calls the wrapped `save`).
    if (given && insideUnguarded.getStore() === given) return original.apply(this, args);
    if (given && parentOf(given) === undefined && unguarded?.(this, args, options)) {
      const call = () => {
        unguardedNow.add(given);
        const direct =
          options.transaction === given
            ? args
            : withOptions(args, at, { ...options, transaction: given });
        return insideUnguarded
          .run(given, () => original.apply(this, direct))
          .finally(() => unguardedNow.delete(given));
      };
      return oneAtATime(given, call);
    }
    const run = async (t: Transaction) => {
      owned.add(t);
      return original.apply(this, withOptions(args, at, { ...options, transaction: t }));
    };
    const start = () =>
      given ? sequelize.transaction({ transaction: given }, run) : sequelize.transaction(run);
    const queue = given ?? (singleWriter ? sequelize : undefined);
    return queue ? oneAtATime(queue, start) : start();
  };
}

function withOptions(args: readonly unknown[], at: number, options: Options): unknown[] {
  const call = [...args];
  while (call.length < at) call.push(undefined);
  call[at] = options;
  return call;
}

const DOOMED = Symbol('outboxkit.capture.doomed');

/**
 * A captured write's events failed after its row was written, in `transaction` (the
 * write's options', or CLS's). In a transaction an unguarded write runs in — no savepoint
 * to roll back to — the transaction is doomed: its `commit` rolls it back and rejects
 * (with an error of the failure's code, the failure as its cause), so a caller that caught
 * the failure cannot commit the row without its events. Elsewhere (a savepoint or a
 * transaction of the wrapper's) the failure's own propagation rolls the write back.
 */
export function failedAfterRow(
  sequelize: Sequelize,
  transaction: Transaction | null | undefined,
  error: unknown,
): void {
  let t: Transaction | undefined;
  try {
    t = resolveTransaction(sequelize, transaction);
  } catch {
    return; // a transaction fire() refuses: nothing was written in it
  }
  if (!t || !unguardedNow.has(t)) return;
  const tx = t as unknown as Record<PropertyKey, unknown>;
  if (tx[DOOMED]) return;
  tx[DOOMED] = true;
  const doomed = t;
  Object.defineProperty(tx, 'commit', {
    configurable: true,
    writable: true,
    value: async function commit(): Promise<never> {
      await doomed.rollback();
      const why = error instanceof Error ? error.message : String(error);
      const message = `the transaction was rolled back instead of committed: a captured write in it failed after its row was written (${why}), and the row cannot commit without its events`;
      throw error instanceof OutboxError
        ? new OutboxError(message, { code: error.code, cause: error })
        : new Error(message, { cause: error });
    },
  });
}

/** The last write queued per transaction (or per single-writer Sequelize); see above. */
const queues = new WeakMap<object, Promise<unknown>>();
/** The queues whose running write the current async context is inside. */
const insideRun = new AsyncLocalStorage<ReadonlySet<object>>();

/**
 * Run `start` after the writes queued on `key` before it — at once when called from inside
 * the run of `key`'s current write (a write of that write's own would wait for itself).
 */
function oneAtATime<T>(key: object, start: () => Promise<T>): Promise<T> {
  const inside = insideRun.getStore();
  if (inside?.has(key)) return start();
  const before = queues.get(key);
  const run = () => insideRun.run(new Set([...(inside ?? []), key]), start);
  const result = before ? before.then(run, run) : run();
  const settled = result.then(
    () => undefined,
    () => undefined,
  );
  queues.set(key, settled);
  void settled.then(() => {
    if (queues.get(key) === settled) queues.delete(key);
  });
  return result;
}
