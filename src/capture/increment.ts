/**
 * `Model.increment` / `decrement`, `instance.increment` / `decrement`: `updated` per
 * matched row, `changed` the fields. Sequelize runs no hook for an increment, so the
 * wrapped static `increment` (which the instance's and both `decrement`s call, so each is
 * captured once, here) writes the events after the statement, in its transaction. Where
 * the dialect's UPDATE hands back its rows, the statement's RETURNING gives them (read
 * first, locked, only for `beforeAndAfter`); elsewhere, or with `returning: false`, they
 * are read first and re-read by key.
 */
import { ConfigurationError } from '../errors/outbox-error.js';
import { type CaptureContext, pairedByIndex } from './context.js';
import { capturesIfAny, capturesOf } from './model-captures.js';
import { readRows, reread, rowId } from './reads.js';
import { byAttribute } from './returning.js';
import type { Instance, ModelClass, Values, WriteOptions } from './sequelize-model.js';
import { Statement } from './statement.js';

type Write = (...args: unknown[]) => Promise<unknown>;

/** `original` (the model's static `increment`) with each outbox's capture around it. */
export function capturingIncrement(model: ModelClass, original: Write, returns: boolean): Write {
  return async function increment(this: unknown, fields: unknown, given?: unknown) {
    const capturers = capturesIfAny(model)?.increment ?? [];
    if (capturers.length === 0) return original.call(this, fields, given);
    const options = { ...((given ?? {}) as WriteOptions) };
    // An increment is `UPDATE … RETURNING *` there unless the caller says `returning: false`.
    const returning = returns && options.returning !== false;
    const statement = new Statement(model);
    for (const c of capturers) await c.before(statement, options, returning);
    const result = (await original.call(this, fields, options)) as unknown[];
    const returned = returning ? returnedRows(model, result, options) : undefined;
    for (const c of capturers) await c.after(statement, fields, options, returned);
    return result;
  };
}

/**
 * The rows an increment's RETURNING gave, by attribute name: a static increment returns
 * them (`[[rows, count]]`, raw columns); an instance's increment puts them on the
 * instance. Another shape (a Sequelize that changed) fails the write rather than lose its
 * events.
 */
function returnedRows(model: ModelClass, result: unknown[], options: WriteOptions): Values[] {
  const instance = options.instance as Instance | undefined;
  if (instance?.dataValues) return [instance.dataValues];
  const first = result?.[0];
  const rows = Array.isArray(first) ? first[0] : undefined;
  if (!Array.isArray(rows)) {
    throw new ConfigurationError(
      `capture(${model.name}): an increment returned no rows (${JSON.stringify(result)?.slice(0, 80)}); this Sequelize answers otherwise than 6.37 — pass returning: false to have capture read the rows instead`,
      { path: `capture(${model.name})` },
    );
  }
  return byAttribute(model, rows as Values[]);
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

/** This outbox's capture around the model's wrapped `increment`. */
export function captureIncrement(ctx: CaptureContext): void {
  const { model, capture } = ctx;
  capturesOf(model).increment.push({
    before: async (statement, options, returning) => {
      // RETURNING gives the rows after; only a before-image needs them read first, locked.
      if (returning && capture.payload !== 'beforeAndAfter') return;
      ctx.slotOf(statement).readFirst = await readRows(ctx, options.where, options, true, true);
    },
    after: async (statement, fields, options, returned) => {
      const changed = ctx.withoutStamps(incrementedFields(model, fields));
      const rows = ctx.slotOf(statement).readFirst ?? [];
      if (returned) {
        const first = new Map(rows.map((r) => [rowId(model, r.dataValues), r.dataValues]));
        const changes = returned.map((a) => ({
          before: first.get(rowId(model, a)) ?? null,
          after: a,
          changed,
        }));
        await ctx.write('updated', changes, options);
        return;
      }
      const after = await reread(ctx, rows, options);
      const changes = pairedByIndex(rows, after, changed, { unpairedBefore: 'null' });
      await ctx.write('updated', changes, options);
    },
  });
}
