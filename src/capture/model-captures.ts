/**
 * What capture keeps per model class, across the outboxes that capture it: the capturers
 * its wrapped `increment` and RETURNING statements call (those run no hooks of theirs, or
 * write their events after the statement, outside any hook), whether one of its captures
 * is loud, and which outboxes installed it.
 */
import type { Runtime } from '../runtime.js';
import type { Instance, Values, WriteOptions } from './sequelize-model.js';
import type { ReturningKind, Statement } from './statement.js';

/**
 * What one outbox's capture does around a model's `increment` (which runs no hooks).
 * `returned`: the rows the statement's RETURNING gave (as raw column values), when it gave
 * them; `before` is told whether it will.
 */
export interface IncrementCapturer {
  before(statement: Statement, options: WriteOptions, returning: boolean): Promise<void>;
  after(
    statement: Statement,
    fields: unknown,
    options: WriteOptions,
    returned: readonly Values[] | undefined,
  ): Promise<void>;
}

/** What one outbox's capture does after a statement run with RETURNING gave its rows. */
export interface ReturningCapturer {
  after(
    statement: Statement,
    values: unknown,
    rows: readonly Instance[],
    options: WriteOptions,
  ): Promise<void>;
}

/** One model's captures. */
export interface ModelCaptures {
  readonly increment: IncrementCapturer[];
  readonly returning: { readonly [K in ReturningKind]: ReturningCapturer[] };
  /**
   * At least one of its captures runs code of the user's after a row is written (an
   * extension, a topic or ordering-key function, an inline or scheduling receiver of one
   * of its topics): its writes keep their savepoint (./unguarded.ts).
   */
  loud: boolean;
  /** The outboxes whose capture of the model is installed (installCapture is idempotent). */
  readonly installedFor: WeakSet<Runtime>;
  /** The outboxes whose cascade hooks are on the model (./cascade-hooks.ts). */
  readonly cascadesFor: WeakSet<Runtime>;
}

/**
 * JUSTIFIED module-level map: keyed by the model class, whose write methods capture wraps
 * once for every outbox that captures it (the wrapper is the model's own property), so
 * what the wrapper calls lives with the model, not with one outbox's install. Weak: a
 * model nobody holds takes its entry with it. Nothing of a write is kept here.
 */
const byModel = new WeakMap<object, ModelCaptures>();

/** The captures of `model` (an empty entry the first time). */
export function capturesOf(model: object): ModelCaptures {
  let entry = byModel.get(model);
  if (!entry) {
    entry = {
      increment: [],
      returning: { update: [], destroy: [], restore: [] },
      loud: false,
      installedFor: new WeakSet(),
      cascadesFor: new WeakSet(),
    };
    byModel.set(model, entry);
  }
  return entry;
}

/** The captures of `model` if any outbox installed one. */
export function capturesIfAny(model: object): ModelCaptures | undefined {
  return byModel.get(model);
}
