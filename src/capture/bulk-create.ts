/**
 * `Model.bulkCreate`: `inserted` per row, in **one** fire for the statement. Sequelize's
 * per-row saves (`individualHooks`) write nothing of their own.
 *
 * With `updateOnDuplicate` / `ignoreDuplicates` the records' values are kept first
 * (Sequelize maps RETURNING rows onto records by index, and SQLite numbers them from the
 * last insert id: both wrong once a row conflicts), and the rows of their conflict keys
 * read before the statement (where the row cannot tell an upsert's outcome: the outcome;
 * elsewhere only for before-images, and for ignored rows) and after it, in its transaction.
 */
import { bulkConflictKey, keyText } from './conflict.js';
import type { CaptureContext, RowChange } from './context.js';
import { readByKey, rowsByKey, UPDATED_BY_UPSERT } from './reads.js';
import type { Instance, Values, WriteOptions } from './sequelize-model.js';
import { beginStatement, carryStatement, statementOf } from './statement.js';

export function captureBulkCreate(ctx: CaptureContext): void {
  const { model, capture, capabilities } = ctx;
  /** Whether an upsert's rows are read before it: for its before-image, or for its outcome. */
  const needsReadFirst = !capabilities.upsertUpdatedSql || capture.payload === 'beforeAndAfter';
  const keyOf = (options: WriteOptions) =>
    bulkConflictKey(model, options.conflictAttributes as string[] | undefined);
  ctx.onRows('beforeBulkCreate', async (instances: Instance[], options) => {
    const statement = beginStatement(options, model);
    statement.bulk = true;
    if (options.individualHooks && !statement.rows) {
      // Sequelize saves each record with a copy of these options: those saves write nothing.
      statement.rows = new Set(instances);
      carryStatement(options, statement);
    }
    if (!options.updateOnDuplicate && !options.ignoreDuplicates) return;
    const slot = ctx.slotOf(statement);
    slot.given = instances.map((i) => ({ ...i.dataValues }));
    if (options.ignoreDuplicates || needsReadFirst) {
      const read = { lock: true, askUpdated: false };
      slot.readFirst = await readByKey(ctx, keyOf(options), slot.given, options, read);
    }
  });
  ctx.onRows('afterBulkCreate', async (instances: Instance[], options) => {
    if (!options.updateOnDuplicate && !options.ignoreDuplicates) {
      return ctx.write(
        'inserted',
        instances.map((i) => ({ after: i.dataValues })),
        options,
      );
    }
    const statement = statementOf(options);
    const slot = statement ? ctx.slotOf(statement) : {};
    const key = keyOf(options);
    const rows = slot.given ?? [];
    const read = { lock: false, askUpdated: Boolean(options.updateOnDuplicate) };
    const wrote = rowsByKey(key, await readByKey(ctx, key, rows, options, read));
    const outcome = outcomes(ctx, options, {
      key,
      rows,
      instances,
      existed: rowsByKey(key, slot.readFirst ?? []),
      wrote,
    });
    await ctx.write('inserted', outcome.inserted, options);
    await ctx.write('updated', outcome.updated, options);
    return undefined;
  });
}

/** What a `bulkCreate` with `updateOnDuplicate` / `ignoreDuplicates` did to each record. */
function outcomes(
  ctx: CaptureContext,
  options: WriteOptions,
  of: {
    key: readonly string[];
    rows: readonly Values[];
    instances: readonly Instance[];
    existed: ReadonlyMap<string, Instance>;
    wrote: ReadonlyMap<string, Instance>;
  },
): { inserted: RowChange[]; updated: RowChange[] } {
  const inserted: RowChange[] = [];
  const updated: RowChange[] = [];
  const changed = ctx.withoutStamps(options.updateOnDuplicate);
  const tells = ctx.capabilities.upsertUpdatedSql !== null;
  for (const [i, row] of of.rows.entries()) {
    const k = keyText(of.key, row);
    if (k === null) {
      // A record without its whole conflict key cannot conflict: an insert, as Sequelize returned it.
      inserted.push({ after: of.instances[i]?.dataValues ?? row });
      continue;
    }
    const before = of.existed.get(k);
    const after = of.wrote.get(k);
    if (!after) continue;
    if (options.ignoreDuplicates) {
      if (before === undefined) inserted.push({ after: after.dataValues });
      continue; // an ignored row: no event
    }
    // Where the row tells (xmax), it says what ON CONFLICT did; else the read first does
    // (a single writer: nothing came between).
    const wasUpdate = tells ? after.dataValues[UPDATED_BY_UPSERT] === true : before !== undefined;
    if (wasUpdate) {
      updated.push({ before: before?.dataValues ?? null, after: after.dataValues, changed });
    } else inserted.push({ after: after.dataValues });
  }
  return { inserted, updated };
}
