/**
 * The transaction around a captured write: one of its own when it is given none, a
 * SAVEPOINT of the one it is given (or CLS carries), so the row and its events commit or
 * roll back together — Sequelize has no hook for a failed write, so a transaction opened in
 * a before hook could never be rolled back.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Sequelize, Transaction } from 'sequelize';
import { resolveTransaction } from '../fire/transaction.js';

type Options = Record<string, unknown> & { transaction?: Transaction | null };

/** Transactions (and savepoints) opened by a wrapper: a write inside one opens no other. */
const owned = new WeakSet<object>();

/**
 * A write that runs in a transaction of its own when given none, and in a savepoint of the
 * one it is given (or CLS carries): the row and its events commit or roll back together.
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
): (...args: unknown[]) => Promise<unknown> {
  const sqlite = sequelize.getDialect() === 'sqlite';
  return function captured(this: unknown, ...args: unknown[]) {
    const options = (args[at] ?? {}) as Options;
    const given = resolveTransaction(sequelize, options.transaction ?? undefined);
    if (given && owned.has(given)) return original.apply(this, args);
    const run = async (t: Transaction) => {
      owned.add(t);
      const call = [...args];
      while (call.length < at) call.push(undefined);
      call[at] = { ...options, transaction: t };
      return original.apply(this, call);
    };
    const start = () =>
      given ? sequelize.transaction({ transaction: given }, run) : sequelize.transaction(run);
    const queue = given ?? (sqlite ? sequelize : undefined);
    return queue ? oneAtATime(queue, start) : start();
  };
}

/** The last write queued per transaction (or per SQLite Sequelize). */
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
