/**
 * The captured model's write methods, wrapped (own properties of that model only — an
 * uncaptured model is not touched and pays nothing): each runs in a transaction of its
 * own or a savepoint of the caller's (./transaction.ts); `increment` gets its capture
 * around it (./increment.ts), and where the dialect's UPDATE hands back its rows, a static
 * `update`, `destroy` and `restore` run with RETURNING (./returning.ts).
 */
import type { Sequelize } from 'sequelize';
import { captureCapabilities } from './capabilities.js';
import { capturingIncrement } from './increment.js';
import { capturingReturning } from './returning.js';
import type { ModelClass } from './sequelize-model.js';
import { inTransaction } from './transaction.js';
import { UNGUARDED_STATIC, unguardedSave } from './unguarded.js';

type Write = (...args: unknown[]) => Promise<unknown>;

/** Marks the methods already wrapped, on the model (shared by every copy of outboxkit loaded). */
const WRAPPED = Symbol.for('outboxkit.capture.wrapped');

/** Which argument holds the options of each wrapped write. */
const STATIC_WRITES: Readonly<Record<string, number>> = {
  create: 1,
  bulkCreate: 1,
  update: 1,
  destroy: 0,
  restore: 0,
  upsert: 1,
  increment: 1,
  decrement: 1,
};
const INSTANCE_WRITES: Readonly<Record<string, number>> = { save: 0, destroy: 0, restore: 0 };

/**
 * Wrap the model's writes (all of them, or only `only`: a model whose deletes reach a
 * captured one through foreign keys has its `destroy`s wrapped). Each method once.
 */
export function wrapWrites(
  model: ModelClass,
  sequelize: Sequelize,
  only?: readonly string[],
): void {
  const marks = model as unknown as Record<symbol, Set<string> | undefined>;
  const wrapped = marks[WRAPPED] ?? new Set<string>();
  marks[WRAPPED] = wrapped;
  const wanted = (method: string, side: string) => {
    if (only && !only.includes(method)) return false;
    if (wrapped.has(`${side}.${method}`)) return false;
    wrapped.add(`${side}.${method}`);
    return true;
  };
  const { returningOnUpdate } = captureCapabilities(sequelize);
  for (const [method, at] of Object.entries(STATIC_WRITES)) {
    if (!wanted(method, 'static')) continue;
    const original = withCapture(model, method, model[method] as Write, returningOnUpdate);
    Object.defineProperty(model, method, {
      configurable: true,
      writable: true,
      value: inTransaction(sequelize, original, at, only ? undefined : UNGUARDED_STATIC[method]),
    });
  }
  for (const [method, at] of Object.entries(INSTANCE_WRITES)) {
    if (!wanted(method, 'instance')) continue;
    const original = model.prototype[method] as Write;
    const unguarded = only || method !== 'save' ? undefined : unguardedSave;
    Object.defineProperty(model.prototype, method, {
      configurable: true,
      writable: true,
      value: inTransaction(sequelize, original, at, unguarded),
    });
  }
}

/** A static write with the capture that runs around it rather than in its hooks. */
function withCapture(model: ModelClass, method: string, write: Write, returns: boolean): Write {
  if (method === 'increment') return capturingIncrement(model, write, returns);
  if (returns && (method === 'update' || method === 'destroy' || method === 'restore')) {
    return capturingReturning(method, model, write);
  }
  return write;
}
