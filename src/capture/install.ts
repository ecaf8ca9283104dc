/**
 * Install change capture on a Sequelize: hooks per write kind for each captured model, and
 * a transaction around each of its writes.
 *
 * Why both. The hooks see each write with its rows and options (Sequelize 6 runs them
 * inside the write, with `options.transaction`), so the events are written in the write's
 * transaction. But a write outside any transaction runs in autocommit, and Sequelize has
 * no hook for a failed write, so a transaction opened in a before hook could never be
 * rolled back. So the model's write methods are wrapped (own properties of that model
 * only — an uncaptured model is not touched and pays nothing): without a transaction the
 * write runs in one opened for it; inside one, in a SAVEPOINT, so an event that fails
 * after its row is written undoes the write even when the caller catches the error and
 * goes on in its transaction. `increment`/`decrement` run no hooks: the wrapped static
 * `increment` captures them. Upserts (`upsert`, `bulkCreate` with `updateOnDuplicate` /
 * `ignoreDuplicates`) read the rows of their conflict keys (see ./conflict.ts). The
 * transaction is ./transaction.ts; what a delete reaches through foreign keys,
 * ./cascade-hooks.ts. On PostgreSQL a static `update` and `increment` take their rows
 * from RETURNING.
 */
import { literal, type Sequelize, type Transaction } from 'sequelize';
import type { CaptureOperation, ResolvedCapture } from '../declare/capture.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import { runtimeOf } from '../runtime.js';
import { unscoped } from './cascade.js';
import { installCascades } from './cascade-hooks.js';
import { bulkConflictKey, keyText, keyWhere, upsertConflictKey } from './conflict.js';
import { changeOf } from './envelope.js';
import type { Instance, ModelClass, Values } from './sequelize-model.js';
import { bulk } from './statements.js';
import { inTransaction, type Unguarded } from './transaction.js';
import { writeChanges } from './write.js';

type Options = Record<string, unknown> & { transaction?: Transaction | null };

const WRAPPED = Symbol.for('outboxkit.capture.wrapped');
/** The attribute a PostgreSQL read names for `xmax <> 0`: the row version ON CONFLICT DO UPDATE wrote. */
const XMAX = '__outboxkit_updated';

/**
 * What one outbox's capture does around a model's `increment` (which runs no hooks).
 * `returned`: the rows the statement's RETURNING gave (PostgreSQL, as raw column values),
 * when it gave them; `before` is told whether it will.
 */
interface IncrementCapturer {
  before(options: Options, returning: boolean): Promise<void>;
  after(fields: unknown, options: Options, returned: readonly Values[] | undefined): Promise<void>;
}
const incrementers = new WeakMap<object, IncrementCapturer[]>();
function incrementCapturers(model: object): IncrementCapturer[] {
  let list = incrementers.get(model);
  if (!list) {
    list = [];
    incrementers.set(model, list);
  }
  return list;
}

/**
 * The static statements that take their rows from RETURNING on PostgreSQL: `update`, and
 * the UPDATEs of a soft `destroy` and of `restore` (a hard DELETE has none in Sequelize).
 */
type ReturningKind = 'update' | 'destroy' | 'restore';

/**
 * One such statement, run with `returning: true`: the rows its RETURNING gives are the
 * rows it wrote, so no read is needed after it (nor before it but for `beforeAndAfter`).
 * The object rides in the options (Sequelize's clone of them keeps it by reference), so
 * the hooks of this call find it.
 */
class ReturningCall {
  /** Rows read before the statement (`beforeAndAfter`), per outbox. */
  readonly readFirst = new Map<Runtime, Instance[]>();
}
const RETURNING_CALL = Symbol('outboxkit.capture.returning');
const callOf = (options: Options): ReturningCall | undefined =>
  (options as Record<symbol, unknown>)[RETURNING_CALL] as ReturningCall | undefined;

/** What one outbox's capture does after such a statement returned its rows. */
interface ReturningCapturer {
  after(
    call: ReturningCall,
    values: unknown,
    rows: readonly Instance[],
    options: Options,
  ): Promise<void>;
}
const returningCapturers = new Map<ReturningKind, WeakMap<object, ReturningCapturer[]>>();
function returningCapturersOf(kind: ReturningKind, model: object): ReturningCapturer[] {
  let byModel = returningCapturers.get(kind);
  if (!byModel) {
    byModel = new WeakMap();
    returningCapturers.set(kind, byModel);
  }
  let list = byModel.get(model);
  if (!list) {
    list = [];
    byModel.set(model, list);
  }
  return list;
}

/** The attribute names an `increment(fields, …)` sets: a name, a list, or an object of amounts. */
function incrementedFields(model: ModelClass, fields: unknown): string[] {
  const names =
    typeof fields === 'string'
      ? [fields]
      : Array.isArray(fields)
        ? (fields as string[])
        : Object.keys((fields as Values | undefined) ?? {});
  const attributes = model.rawAttributes;
  return names.map(
    (n) => Object.keys(attributes).find((a) => a === n || attributes[a]?.field === n) ?? n,
  );
}

/** Rows read before a bulk statement (by its options object), per outbox. */
const readFirst = new WeakMap<object, Map<Runtime, Instance[]>>();
/** An instance's values before a destroy/restore (which resets them before its after hook). */
const snapshots = new WeakMap<object, Map<Runtime, Values>>();
/** The records of an upsert statement as given (by its options object), per outbox. */
const given = new WeakMap<object, Map<Runtime, Values[]>>();
/** The conflict key an upsert's values chose (by its options object), per outbox. */
const upsertKeys = new WeakMap<object, Map<Runtime, readonly string[]>>();

/**
 * Register the hooks of every model the outbox's config captures, on `sequelize` (the
 * outbox's own). Idempotent: a second call for the same outbox adds nothing.
 *
 * @throws {ConfigurationError} for a captured model not defined on that Sequelize (its
 * events would commit on other connections than its rows), or another Sequelize than the
 * outbox's.
 */
export function installCapture(outbox: object, sequelize?: Sequelize): void {
  const rt = runtimeOf(outbox);
  const on = sequelize ?? rt.sequelize;
  if (on !== rt.sequelize) {
    throw new ConfigurationError(
      "installCapture(outbox, sequelize): the Sequelize must be the outbox's own: a captured row's events commit in its write's transaction",
      { path: 'sequelize' },
    );
  }
  for (const capture of rt.config.captures) {
    const model = capture.model as unknown as ModelClass;
    const defined = (on as unknown as { models: Record<string, unknown> }).models[model.name];
    if (defined !== model) {
      throw new ConfigurationError(
        `installCapture: the captured model ${model.name} is not defined on this Sequelize (sequelize.define or Model.init with it); define it there, or drop its capture`,
        { path: `capture(${model.name})` },
      );
    }
    const done = installedOf(rt);
    if (done.has(model)) continue;
    done.add(model);
    if (!quietCapture(rt, capture)) loud.add(model);
    wrapWrites(model, on);
    addHooks(rt, capture, model);
  }
  installCascades(rt, on, (parent) => wrapWrites(parent, on, ['destroy']));
}

const installed = new WeakMap<Runtime, WeakSet<object>>();
function installedOf(rt: Runtime): WeakSet<object> {
  let set = installed.get(rt);
  if (!set) {
    set = new WeakSet();
    installed.set(rt, set);
  }
  return set;
}

// ---------------------------------------------------------------- transactions

/** Which argument holds the options of each wrapped write. */
const STATIC_WRITES: Record<string, number> = {
  create: 1,
  bulkCreate: 1,
  update: 1,
  destroy: 0,
  restore: 0,
  upsert: 1,
  increment: 1,
  decrement: 1,
};
const INSTANCE_WRITES: Record<string, number> = { save: 0, destroy: 0, restore: 0 };

/**
 * Wrap the model's writes (all of them, or only `only`: a model whose deletes reach a
 * captured one through foreign keys has its `destroy`s wrapped). Each method once.
 */
function wrapWrites(model: ModelClass, sequelize: Sequelize, only?: readonly string[]): void {
  const marks = model as unknown as Record<symbol, Set<string> | undefined>;
  const wrapped = marks[WRAPPED] ?? new Set<string>();
  marks[WRAPPED] = wrapped;
  const wanted = (method: string, side: string) => {
    if (only && !only.includes(method)) return false;
    if (wrapped.has(`${side}.${method}`)) return false;
    wrapped.add(`${side}.${method}`);
    return true;
  };
  for (const [method, at] of Object.entries(STATIC_WRITES)) {
    if (!wanted(method, 'static')) continue;
    const unwrapped = model[method] as (...args: unknown[]) => Promise<unknown>;
    const original =
      method === 'increment'
        ? capturingIncrement(model, unwrapped, sequelize.getDialect() === 'postgres')
        : (method === 'update' || method === 'destroy' || method === 'restore') &&
            sequelize.getDialect() === 'postgres'
          ? capturingReturning(method, model, unwrapped)
          : unwrapped;
    Object.defineProperty(model, method, {
      configurable: true,
      writable: true,
      value: inTransaction(sequelize, original, at, only ? undefined : UNGUARDED[method]),
    });
  }
  for (const [method, at] of Object.entries(INSTANCE_WRITES)) {
    if (!wanted(method, 'instance')) continue;
    const original = model.prototype[method] as (...args: unknown[]) => Promise<unknown>;
    Object.defineProperty(model.prototype, method, {
      configurable: true,
      writable: true,
      value: inTransaction(
        sequelize,
        original,
        at,
        only ? undefined : method === 'save' ? unguardedSave : undefined,
      ),
    });
  }
}

// ---------------------------------------------------------------- savepoints

/**
 * Models at least one of whose captures runs code of the user's after a row is written:
 * an extension, a topic or ordering-key function, or an inline or scheduling (fan-out,
 * `due`) receiver of one of its topics. Their writes keep their savepoint.
 */
const loud = new WeakSet<object>();

/** Whether nothing of the user's runs when this capture writes a change's events. */
function quietCapture(rt: Runtime, capture: ResolvedCapture): boolean {
  if (capture.extend || capture.extendMany || capture.topicOf) return false;
  if (typeof capture.orderingKey === 'function') return false;
  for (const topic of Object.values(capture.topics)) {
    const route = topic === undefined ? undefined : rt.config.route(topic);
    if (!route || route.inline.length > 0 || route.schedules) return false;
  }
  return true;
}

/** A hook list as Sequelize 6 keeps it: functions, or `{ name, fn }`. */
type HookList = readonly (((...args: never[]) => unknown) | { name?: string })[];
const hooksOf = (on: unknown, type: string): HookList =>
  ((on as { options?: { hooks?: Record<string, HookList> } }).options?.hooks?.[type] ??
    []) as HookList;
const ours = (hook: HookList[number]) =>
  typeof hook === 'object' && typeof hook.name === 'string' && hook.name.startsWith('outboxkit:');

/**
 * Whether only capture's hooks run for these hook types on the model (its own and its
 * Sequelize's): another after-hook could fail after the row, before or after its events.
 */
function onlyOurHooks(model: ModelClass, types: readonly string[]): boolean {
  for (const type of types) {
    if (!hooksOf(model, type).every(ours)) return false;
    if (hooksOf(model.sequelize, type).length > 0) return false;
  }
  return true;
}

/**
 * The writes that may run without a savepoint in the caller's transaction (see
 * ./transaction.ts): an insert or a plain `bulkCreate` of a model whose captures are quiet,
 * without `include` (its associated rows are saved after the row) and without other
 * after-hooks. The rest (updates, deletes, upserts, conflicts, cascades) keep theirs.
 */
const UNGUARDED: Record<string, Unguarded | undefined> = {
  create: (self, _args, options) => {
    const model = self as ModelClass;
    return (
      !loud.has(model) && !options.include && onlyOurHooks(model, ['afterCreate', 'afterUpdate'])
    );
  },
  bulkCreate: (self, _args, options) => {
    const model = self as ModelClass;
    return (
      !loud.has(model) &&
      !options.include &&
      !options.updateOnDuplicate &&
      !options.ignoreDuplicates &&
      onlyOurHooks(model, ['afterBulkCreate', 'afterCreate', 'afterUpdate'])
    );
  },
};
/** `instance.save()`: an insert or an update, the same conditions as `create`. */
const unguardedSave: Unguarded = (self) => {
  const instance = self as { constructor: ModelClass; _options?: { include?: unknown[] } };
  const model = instance.constructor;
  return (
    !loud.has(model) &&
    !instance._options?.include?.length &&
    onlyOurHooks(model, ['afterCreate', 'afterUpdate'])
  );
};

/**
 * `Model.increment` with each outbox's capture around it: Sequelize runs no hook for an
 * increment, so the wrapper writes the events after the statement, in its transaction. On
 * PostgreSQL the statement's RETURNING gives the rows (read first, locked, only for
 * `beforeAndAfter`); on SQLite, or with `returning: false`, they are read first and re-read
 * by key. Instance `increment` and both `decrement`s call the static `increment`, so each
 * is captured once, here.
 */
function capturingIncrement(
  model: ModelClass,
  original: (...args: unknown[]) => Promise<unknown>,
  postgres: boolean,
): (...args: unknown[]) => Promise<unknown> {
  return async function increment(this: unknown, fields: unknown, given?: unknown) {
    const capturers = incrementCapturers(model);
    if (capturers.length === 0) return original.call(this, fields, given);
    const options = { ...((given ?? {}) as Options) };
    // PostgreSQL's increment is `UPDATE … RETURNING *` unless the caller says `returning: false`.
    const returning = postgres && options.returning !== false;
    for (const c of capturers) await c.before(options, returning);
    const result = (await original.call(this, fields, options)) as unknown[];
    const returned = returning ? returnedRows(model, result, options) : undefined;
    for (const c of capturers) await c.after(fields, options, returned);
    return result;
  };
}

/**
 * The rows a PostgreSQL increment's RETURNING gave, by attribute name: a static increment
 * returns them (`[[rows, count]]`, raw columns); an instance's increment puts them on the
 * instance. Another shape (a Sequelize that changed) fails the write rather than lose its
 * events.
 */
function returnedRows(model: ModelClass, result: unknown[], options: Options): Values[] {
  const instance = options.instance as Instance | undefined;
  if (instance?.dataValues) return [instance.dataValues];
  const first = result?.[0];
  const rows = Array.isArray(first) ? first[0] : undefined;
  if (!Array.isArray(rows)) {
    throw new ConfigurationError(
      `capture(${model.name}): a PostgreSQL increment returned no rows (${JSON.stringify(result)?.slice(0, 80)}); this Sequelize answers otherwise than 6.37 — pass returning: false to have capture read the rows instead`,
      { path: `capture(${model.name})` },
    );
  }
  return byAttribute(model, rows as Values[]);
}

/**
 * Raw rows by attribute name: an increment's `RETURNING *` names the columns, an update's
 * RETURNING aliases them to their attributes (`"hit_count" AS "hits"`).
 */
function byAttribute(model: ModelClass, rows: readonly Values[]): Values[] {
  const columns = Object.entries(model.rawAttributes).map(([name, a]) => [name, a.field ?? name]);
  return rows.map((row) =>
    Object.fromEntries(columns.map(([n, f]) => [n, Object.hasOwn(row, n!) ? row[n!] : row[f!]])),
  );
}

/**
 * `Model.update`, a soft `Model.destroy` and `Model.restore` on PostgreSQL with each
 * outbox's capture after them: run with `returning: true` (`RETURNING *`), their rows are
 * the `after` images, so the statement costs no read after it (the reference:
 * "`QuerySet.update()`: RETURNING of the keys / of the fields"). The caller's result keeps
 * its shape — `update`'s `[count]` (its rows with individual hooks), `destroy`'s and
 * `restore`'s count — unless it asked for the rows. A caller naming its own `returning`
 * attributes, and a hard delete, go the hooks' way (rows read first, re-read by key).
 */
function capturingReturning(
  kind: ReturningKind,
  model: ModelClass,
  original: (...args: unknown[]) => Promise<unknown>,
): (...args: unknown[]) => Promise<unknown> {
  const at = kind === 'update' ? 1 : 0;
  const paranoid = model._timestampAttributes.deletedAt !== undefined;
  return async function returning(this: unknown, ...args: unknown[]) {
    const capturers = returningCapturers.get(kind)?.get(model);
    const options = (args[at] ?? {}) as Options;
    const byReturning =
      capturers !== undefined &&
      capturers.length > 0 &&
      !Array.isArray(options.returning) &&
      (kind !== 'destroy' || (paranoid && !options.force));
    if (!byReturning) return original.apply(this, args);
    const call = new ReturningCall();
    const callArgs = [...args];
    while (callArgs.length < at) callArgs.push(undefined);
    // Rows nobody but capture reads come back raw (no instance built per row), by column.
    const raw = !options.returning && !options.individualHooks;
    callArgs[at] = {
      ...options,
      returning: true,
      ...(raw ? { raw: true } : {}),
      [RETURNING_CALL]: call,
    };
    const result = await original.apply(this, callArgs);
    const returned = kind === 'update' ? ((result as [number, unknown[]?])[1] ?? []) : result;
    if (!Array.isArray(returned)) {
      throw new ConfigurationError(
        `capture(${model.name}): a PostgreSQL ${kind} with returning: true gave no rows; this Sequelize answers otherwise than 6.37 — pass your own returning list to have capture read the rows instead`,
        { path: `capture(${model.name})` },
      );
    }
    const rows: Instance[] = raw
      ? byAttribute(model, returned as Values[]).map((v) => ({
          dataValues: v,
          _previousDataValues: v,
        }))
      : (returned as Instance[]);
    for (const c of capturers) {
      await c.after(call, kind === 'update' ? args[0] : undefined, rows, options);
    }
    if (options.returning) return result;
    if (kind === 'update') return options.individualHooks ? result : [(result as unknown[])[0]];
    return rows.length;
  };
}

// ---------------------------------------------------------------- hooks

function addHooks(rt: Runtime, capture: ResolvedCapture, model: ModelClass): void {
  const name = `outboxkit:${rt.processId}`;
  const ts = model._timestampAttributes;
  const stamps = new Set([ts.createdAt, ts.updatedAt, model._versionAttribute].filter(Boolean));
  const paranoid = ts.deletedAt !== undefined;
  const withoutStamps = (fields: unknown): string[] | null =>
    Array.isArray(fields) ? fields.filter((f: string) => !stamps.has(f)) : null;
  const now = () => rt.clock();
  const write = (
    operation: CaptureOperation,
    rows: { before?: Values | null; after?: Values | null; changed?: readonly string[] | null }[],
    options: Options,
  ) => {
    if (rows.length === 0 || !capture.operations.has(operation)) return undefined;
    const at = now();
    return writeChanges(
      rt,
      capture,
      rows.map((r) => changeOf(capture, operation, r, at)),
      options.transaction,
    );
  };
  const hook = (type: string, fn: (...args: never[]) => unknown) => model.addHook(type, name, fn);
  const pkWhere = (rows: Instance[]): Values => {
    const [key] = model.primaryKeyAttributes;
    if (model.primaryKeyAttributes.length === 1 && key) {
      return { [key]: rows.map((r) => r.dataValues[key]) };
    }
    return {
      [Symbol.for('or')]: rows.map((r) =>
        Object.fromEntries(model.primaryKeyAttributes.map((k) => [k, r.dataValues[k]])),
      ),
    };
  };
  const postgres = rt.sequelize.getDialect() === 'postgres';
  /** Whether an upsert's rows are read before it: for its before-image, or (SQLite) its outcome. */
  const needsReadFirst = !postgres || capture.payload === 'beforeAndAfter';
  /**
   * The rows of `where`, in the write's transaction. Without the default scope (the
   * statements' `where` already carries it — Sequelize injects it before their hooks — and
   * a re-read by key must find rows the write moved out of it), but for `increment`, whose
   * options are read before Sequelize injects it.
   */
  const readRows = (
    where: unknown,
    options: Options,
    lock: boolean,
    scoped = false,
  ): Promise<Instance[]> =>
    (scoped ? model : unscoped(model)).findAll({
      where,
      transaction: options.transaction,
      paranoid: false,
      ...(capture.payload === 'keys' ? { attributes: model.primaryKeyAttributes } : {}),
      ...(lock && postgres && options.transaction ? { lock: 'UPDATE' } : {}),
      logging: options.logging,
    });
  /**
   * The rows of these values' conflict keys, in the write's transaction: every attribute
   * (`keys` mode: the keys and the conflict key, unless `whole`), on PostgreSQL locked
   * (`lock`) or with whether ON CONFLICT updated the row (`xmax`).
   */
  const readByKey = async (
    key: readonly string[],
    rows: readonly Values[],
    options: Options,
    lock: boolean,
    xmax: boolean,
  ): Promise<Instance[]> => {
    const where = keyWhere(key, rows);
    if (where === null) return [];
    const attributes =
      capture.payload === 'keys'
        ? [...new Set([...model.primaryKeyAttributes, ...key])]
        : Object.keys(model.rawAttributes);
    return unscoped(model).findAll({
      where,
      transaction: options.transaction,
      paranoid: false,
      attributes: xmax ? [...attributes, [literal(`("xmax"::text <> '0')`), XMAX]] : attributes,
      ...(lock && postgres && options.transaction ? { lock: 'UPDATE' } : {}),
      logging: options.logging,
    });
  };
  const byKey = (key: readonly string[], rows: readonly Instance[]): Map<string, Instance> => {
    const map = new Map<string, Instance>();
    for (const r of rows) {
      const k = keyText(key, r.dataValues);
      if (k !== null) map.set(k, r);
    }
    return map;
  };
  const keep = <T>(store: WeakMap<object, Map<Runtime, T>>, key: object, value: T): void => {
    let map = store.get(key);
    if (!map) {
      map = new Map();
      store.set(key, map);
    }
    map.set(rt, value);
  };
  const take = <T>(store: WeakMap<object, Map<Runtime, T>>, key: object): T | undefined =>
    store.get(key)?.get(rt);
  const reread = async (rows: Instance[], options: Options): Promise<Instance[]> => {
    if (capture.payload === 'keys' || rows.length === 0) return rows;
    const fresh = await readRows(pkWhere(rows), options, false);
    const id = (r: Instance) =>
      model.primaryKeyAttributes.map((k) => String(r.dataValues[k])).join('\u0000');
    const byId = new Map(fresh.map((r) => [id(r), r]));
    return rows.map((r) => byId.get(id(r))).filter((r): r is Instance => r !== undefined);
  };

  // create / save (insert and update) / instance update
  hook('afterCreate', ((instance: Instance, options: Options) => {
    if (bulk.has(options)) return undefined;
    return write('inserted', [{ after: instance.dataValues }], options);
  }) as never);
  hook('afterUpdate', ((instance: Instance, options: Options) => {
    if (bulk.has(options)) return undefined;
    return write(
      'updated',
      [
        {
          before: instance._previousDataValues,
          after: instance.dataValues,
          changed: withoutStamps(options.fields),
        },
      ],
      options,
    );
  }) as never);

  // instance destroy (a soft delete is an update of deletedAt) and restore
  const snapshot = ((instance: Instance, options: Options) => {
    if (!bulk.has(options)) keep(snapshots, instance, { ...instance._previousDataValues });
  }) as never;
  hook('beforeDestroy', snapshot);
  hook('beforeRestore', snapshot);
  hook('afterDestroy', ((instance: Instance, options: Options) => {
    if (bulk.has(options)) return undefined;
    const before = take(snapshots, instance) ?? instance.dataValues;
    if (paranoid && !options.force) {
      return write(
        'updated',
        [{ before, after: instance.dataValues, changed: [ts.deletedAt!] }],
        options,
      );
    }
    return write('deleted', [{ before }], options);
  }) as never);
  hook('afterRestore', ((instance: Instance, options: Options) => {
    if (bulk.has(options)) return undefined;
    const before = take(snapshots, instance) ?? instance.dataValues;
    return write(
      'updated',
      [{ before, after: instance.dataValues, changed: [ts.deletedAt!] }],
      options,
    );
  }) as never);

  // bulkCreate: one fire for all its rows. With updateOnDuplicate / ignoreDuplicates the
  // records' values are kept first (Sequelize maps RETURNING rows onto records by index,
  // and SQLite numbers them from the last insert id: both wrong once a row conflicts),
  // the rows of their conflict keys read before (SQLite: the outcome; PostgreSQL: only for
  // before-images, and for ignored rows) and after the statement, in its transaction.
  hook('beforeBulkCreate', (async (instances: Instance[], options: Options) => {
    bulk.add(options);
    if (!options.updateOnDuplicate && !options.ignoreDuplicates) return;
    const rows = instances.map((i) => ({ ...i.dataValues }));
    keep(given, options, rows);
    if (options.ignoreDuplicates || needsReadFirst) {
      const key = bulkConflictKey(model, options.conflictAttributes as string[] | undefined);
      keep(readFirst, options, await readByKey(key, rows, options, true, false));
    }
  }) as never);
  hook('afterBulkCreate', (async (instances: Instance[], options: Options) => {
    if (!options.updateOnDuplicate && !options.ignoreDuplicates) {
      return write(
        'inserted',
        instances.map((i) => ({ after: i.dataValues })),
        options,
      );
    }
    const key = bulkConflictKey(model, options.conflictAttributes as string[] | undefined);
    const rows = take(given, options) ?? [];
    const existed = byKey(key, take(readFirst, options) ?? []);
    const xmax = postgres && Boolean(options.updateOnDuplicate);
    const wrote = byKey(key, await readByKey(key, rows, options, false, xmax));
    const inserted: { after: Values }[] = [];
    const updated: { before: Values | null; after: Values; changed: string[] | null }[] = [];
    const changed = withoutStamps(options.updateOnDuplicate);
    for (const [i, row] of rows.entries()) {
      const k = keyText(key, row);
      if (k === null) {
        // A record without its whole conflict key cannot conflict: an insert, as Sequelize returned it.
        inserted.push({ after: instances[i]?.dataValues ?? row });
        continue;
      }
      const before = existed.get(k);
      const after = wrote.get(k);
      if (!after) continue;
      if (options.ignoreDuplicates) {
        if (before === undefined) inserted.push({ after: after.dataValues });
        continue; // an ignored row: no event
      }
      // PostgreSQL says what it did (xmax); SQLite serialises writers, so the read first does.
      const wasUpdate = postgres ? after.dataValues[XMAX] === true : before !== undefined;
      if (wasUpdate) {
        updated.push({ before: before?.dataValues ?? null, after: after.dataValues, changed });
      } else inserted.push({ after: after.dataValues });
    }
    await write('inserted', inserted, options);
    await write('updated', updated, options);
    return undefined;
  }) as never);

  // upsert: Sequelize tells neither dialect's outcome (created is null; SQLite's id is the
  // last insert's), so the row of its conflict key is read after the write — and before
  // it where needed (SQLite: the outcome; a before-image) — in its transaction; on
  // PostgreSQL the row says whether ON CONFLICT updated it (xmax <> 0).
  hook('beforeUpsert', (async (values: Values, options: Options) => {
    const built = (options.instance as Instance | undefined)?.dataValues ?? {};
    const row = { ...built, ...values };
    const key = upsertConflictKey(model, row, options.conflictFields as string[] | undefined);
    keep(given, options, [row]);
    keep(upsertKeys, options, key);
    if (needsReadFirst) keep(readFirst, options, await readByKey(key, [row], options, true, false));
  }) as never);
  hook('afterUpsert', (async ([instance]: [Instance], options: Options) => {
    let key = take(upsertKeys, options) ?? model.primaryKeyAttributes;
    let [row] = take(given, options) ?? [];
    if (!row || keyText(key, row) === null) {
      // No conflict key in the values: only PostgreSQL's RETURNING names the row.
      key = model.primaryKeyAttributes;
      row = instance.dataValues;
    }
    const [before] = take(readFirst, options) ?? [];
    const [after] = await readByKey(key, [row], options, false, postgres);
    const wasUpdate = after && postgres ? after.dataValues[XMAX] === true : before !== undefined;
    const image = after?.dataValues ?? instance.dataValues;
    if (!wasUpdate) return write('inserted', [{ after: image }], options);
    return write(
      'updated',
      [
        {
          before: before?.dataValues ?? null,
          after: image,
          changed: withoutStamps(options.fields),
        },
      ],
      options,
    );
  }) as never);

  // increment / decrement run no hooks: the wrapped static increment (which instance
  // increment and both decrements go through) calls these around the statement.
  incrementCapturers(model).push({
    before: async (options, returning) => {
      // RETURNING gives the rows after; only a before-image needs them read first, locked.
      if (returning && capture.payload !== 'beforeAndAfter') return;
      keep(readFirst, options, await readRows(options.where, options, true, true));
    },
    after: async (fields, options, returned) => {
      const changed = withoutStamps(incrementedFields(model, fields));
      const rows = take(readFirst, options) ?? [];
      if (returned) {
        const id = (v: Values) =>
          model.primaryKeyAttributes.map((k) => String(v[k])).join('\u0000');
        const first = new Map(rows.map((r) => [id(r.dataValues), r.dataValues]));
        await write(
          'updated',
          returned.map((a) => ({ before: first.get(id(a)) ?? null, after: a, changed })),
          options,
        );
        return;
      }
      const after = await reread(rows, options);
      const byIndex = rows.length === after.length;
      await write(
        'updated',
        after.map((a, i) => ({
          before: byIndex ? rows[i]!.dataValues : null,
          after: a.dataValues,
          changed,
        })),
        options,
      );
    },
  });

  // static update / destroy / restore: the rows read first (locked on PostgreSQL) and
  // re-read by key after — except where capturingReturning runs the statement: its
  // RETURNING gives the rows after, and only a before-image needs them read first.
  const readFirstFor = (options: Options) => {
    bulk.add(options);
    const call = callOf(options);
    if (!call) {
      return readRows(options.where, options, true).then((rows) => keep(readFirst, options, rows));
    }
    if (capture.payload !== 'beforeAndAfter') return undefined;
    return readRows(options.where, options, true).then((rows) => call.readFirst.set(rt, rows));
  };
  hook('beforeBulkUpdate', readFirstFor as never);
  hook('beforeBulkDestroy', readFirstFor as never);
  hook('beforeBulkRestore', readFirstFor as never);
  const fromReturning =
    (changedOf: (values: unknown) => string[] | null): ReturningCapturer['after'] =>
    (call, values, rows, options) => {
      const id = (r: Instance) =>
        model.primaryKeyAttributes.map((k) => String(r.dataValues[k])).join('\u0000');
      const first = new Map((call.readFirst.get(rt) ?? []).map((r) => [id(r), r]));
      const changed = changedOf(values);
      return (
        write(
          'updated',
          rows.map((a) => ({
            before: first.get(id(a))?.dataValues ?? null,
            after: a.dataValues,
            changed,
          })),
          options,
        ) ?? Promise.resolve()
      );
    };
  returningCapturersOf('update', model).push({
    after: fromReturning((values) =>
      withoutStamps(Object.keys((values as Values | undefined) ?? {})),
    ),
  });
  if (paranoid) {
    returningCapturersOf('destroy', model).push({ after: fromReturning(() => [ts.deletedAt!]) });
    returningCapturersOf('restore', model).push({ after: fromReturning(() => [ts.deletedAt!]) });
  }
  hook('afterBulkUpdate', (async (options: Options) => {
    if (callOf(options)) return undefined; // written by capturingReturning
    const rows = take(readFirst, options) ?? [];
    const after = await reread(rows, options);
    const changed = withoutStamps(Object.keys((options.attributes as Values) ?? {}));
    const byIndex = rows.length === after.length;
    return write(
      'updated',
      after.map((a, i) => ({
        before: byIndex ? rows[i]!.dataValues : null,
        after: a.dataValues,
        changed,
      })),
      options,
    );
  }) as never);
  hook('afterBulkDestroy', (async (options: Options) => {
    if (callOf(options)) return undefined; // a soft delete, written by capturingReturning
    const rows = take(readFirst, options) ?? [];
    if (paranoid && !options.force) {
      const after = await reread(rows, options);
      return write(
        'updated',
        after.map((a, i) => ({
          before: rows[i]?.dataValues,
          after: a.dataValues,
          changed: [ts.deletedAt!],
        })),
        options,
      );
    }
    return write(
      'deleted',
      rows.map((r) => ({ before: r.dataValues })),
      options,
    );
  }) as never);
  hook('afterBulkRestore', (async (options: Options) => {
    if (callOf(options)) return undefined; // written by capturingReturning
    const rows = take(readFirst, options) ?? [];
    const after = await reread(rows, options);
    return write(
      'updated',
      after.map((a, i) => ({
        before: rows[i]?.dataValues,
        after: a.dataValues,
        changed: [ts.deletedAt!],
      })),
      options,
    );
  }) as never);
}
