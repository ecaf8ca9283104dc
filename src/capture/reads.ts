/**
 * The reads capture runs in a write's transaction where the write itself does not hand
 * over its rows: the rows a statement matches (before it), the same rows again by key
 * (after it), and the rows of an upsert's conflict keys.
 */
import { literal } from 'sequelize';
import { unscoped } from './cascade.js';
import { keyText, keyWhere } from './conflict.js';
import type { CaptureContext } from './context.js';
import type { Instance, ModelClass, Values, WriteOptions } from './sequelize-model.js';
import { beginStatement, type ReturningKind } from './statement.js';

/** The attribute a read names for the dialect's "ON CONFLICT updated this row" (`upsertUpdatedSql`). */
export const UPDATED_BY_UPSERT = '__outboxkit_updated';

/** A row's primary key as text, to match rows read apart. */
export function rowId(model: ModelClass, values: Values): string {
  return model.primaryKeyAttributes.map((k) => String(values[k])).join('\u0000');
}

/** A `where` of these rows' primary keys. */
function pkWhere(model: ModelClass, rows: readonly Instance[]): Values {
  const [key] = model.primaryKeyAttributes;
  if (model.primaryKeyAttributes.length === 1 && key) {
    return { [key]: rows.map((r) => r.dataValues[key]) };
  }
  return {
    [Symbol.for('or')]: rows.map((r) =>
      Object.fromEntries(model.primaryKeyAttributes.map((k) => [k, r.dataValues[k]])),
    ),
  };
}

/** The lock a read before a write takes: `FOR UPDATE` where the dialect has row locks. */
function lockOf(ctx: CaptureContext, lock: boolean, options: WriteOptions) {
  return lock && ctx.capabilities.rowLocks && options.transaction ? { lock: 'UPDATE' } : {};
}

/**
 * The rows of `where`, in the write's transaction (keys only for `keys`). Without the
 * default scope (the statements' `where` already carries it — Sequelize injects it before
 * their hooks — and a re-read by key must find rows the write moved out of it), but for
 * `increment` (`scoped`), whose options are read before Sequelize injects it.
 */
export function readRows(
  ctx: CaptureContext,
  where: unknown,
  options: WriteOptions,
  lock: boolean,
  scoped = false,
): Promise<Instance[]> {
  const { model, capture } = ctx;
  return (scoped ? model : unscoped(model)).findAll({
    where,
    transaction: options.transaction,
    paranoid: false,
    ...(capture.payload === 'keys' ? { attributes: model.primaryKeyAttributes } : {}),
    ...lockOf(ctx, lock, options),
    logging: options.logging,
  });
}

/** The same rows again by key, after the write (in their order; `keys`: no read). */
export async function reread(
  ctx: CaptureContext,
  rows: Instance[],
  options: WriteOptions,
): Promise<Instance[]> {
  if (ctx.capture.payload === 'keys' || rows.length === 0) return rows;
  const { model } = ctx;
  const fresh = await readRows(ctx, pkWhere(model, rows), options, false);
  const byId = new Map(fresh.map((r) => [rowId(model, r.dataValues), r]));
  return rows
    .map((r) => byId.get(rowId(model, r.dataValues)))
    .filter((r): r is Instance => r !== undefined);
}

/**
 * The rows of these values' conflict keys, in the write's transaction: every attribute
 * (`keys` mode: the keys and the conflict key), locked (`lock`) where the dialect has row
 * locks, or with whether ON CONFLICT updated the row (`askUpdated`, as
 * {@link UPDATED_BY_UPSERT}) where the dialect tells.
 */
export async function readByKey(
  ctx: CaptureContext,
  key: readonly string[],
  rows: readonly Values[],
  options: WriteOptions,
  { lock, askUpdated }: { lock: boolean; askUpdated: boolean },
): Promise<Instance[]> {
  const where = keyWhere(key, rows);
  if (where === null) return [];
  const { model, capture } = ctx;
  const attributes =
    capture.payload === 'keys'
      ? [...new Set([...model.primaryKeyAttributes, ...key])]
      : Object.keys(model.rawAttributes);
  const updated = askUpdated ? ctx.capabilities.upsertUpdatedSql : null;
  return unscoped(model).findAll({
    where,
    transaction: options.transaction,
    paranoid: false,
    attributes: updated ? [...attributes, [literal(updated), UPDATED_BY_UPSERT]] : attributes,
    ...lockOf(ctx, lock, options),
    logging: options.logging,
  });
}

/** Rows by the text of their conflict key. */
export function rowsByKey(
  key: readonly string[],
  rows: readonly Instance[],
): Map<string, Instance> {
  const map = new Map<string, Instance>();
  for (const r of rows) {
    const k = keyText(key, r.dataValues);
    if (k !== null) map.set(k, r);
  }
  return map;
}

/**
 * The before-hook of a static `update`/`destroy`/`restore`: the statement begins (captured
 * whole: its per-row hooks write nothing) and its matched rows are read first, locked where
 * the dialect locks rows — but when the wrapper runs it with RETURNING (./returning.ts),
 * only for a before-image.
 */
export function readMatchedFirst(
  ctx: CaptureContext,
  kind: ReturningKind,
): (options: WriteOptions) => Promise<void> | undefined {
  return (options) => {
    const statement = beginStatement(options, ctx.model, kind);
    statement.bulk = true;
    if (statement.returning && ctx.capture.payload !== 'beforeAndAfter') return undefined;
    return readRows(ctx, options.where, options, true).then((rows) => {
      ctx.slotOf(statement).readFirst = rows;
    });
  };
}
