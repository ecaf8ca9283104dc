/**
 * `instance.destroy()` and `Model.destroy`: `deleted` per row; on a paranoid model, unless
 * `force`, an update of `deletedAt` (`updated`, `changed` `['deletedAt']`).
 *
 * An instance's values are kept before its destroy (Sequelize resets them before the
 * after-hook). A static hard delete reads its rows first (locked where the dialect locks
 * rows: Sequelize has no DELETE … RETURNING); a static soft delete is an UPDATE — run with
 * RETURNING where the dialect hands its rows back (./returning.ts), else read first and
 * re-read by key. What a delete reaches through foreign keys is ./cascade-hooks.ts.
 */
import { type CaptureContext, pairedByIndex } from './context.js';
import { capturesOf } from './model-captures.js';
import { readMatchedFirst, reread } from './reads.js';
import { fromReturning } from './returning.js';
import type { Instance, WriteOptions } from './sequelize-model.js';
import { beginStatement, partOfBulk, statementOf } from './statement.js';

export function captureDestroy(ctx: CaptureContext): void {
  const { model, deletedAt } = ctx;
  ctx.onInstance('beforeDestroy', keepSnapshot(ctx));
  ctx.onInstance('afterDestroy', (instance, options) => {
    if (partOfBulk(options, model, instance)) return undefined;
    const before = snapshotOf(ctx, options) ?? instance.dataValues;
    if (deletedAt && !options.force) {
      const change = { before, after: instance.dataValues, changed: [deletedAt] };
      return ctx.write('updated', [change], options);
    }
    return ctx.write('deleted', [{ before }], options);
  });
  ctx.onStatement('beforeBulkDestroy', readMatchedFirst(ctx, 'destroy'));
  if (deletedAt) {
    capturesOf(model).returning.destroy.push(fromReturning(ctx, () => [deletedAt]));
  }
  ctx.onStatement('afterBulkDestroy', async (options) => {
    const statement = statementOf(options);
    if (!statement || statement.returning) return undefined; // a soft delete, written by capturingReturning
    const rows = ctx.slotOf(statement).readFirst ?? [];
    if (deletedAt && !options.force) {
      const after = await reread(ctx, rows, options);
      return ctx.write(
        'updated',
        pairedByIndex(rows, after, [deletedAt], { unpairedBefore: 'byIndex' }),
        options,
      );
    }
    return ctx.write(
      'deleted',
      rows.map((r) => ({ before: r.dataValues })),
      options,
    );
  });
}

/**
 * The before-hook of an instance's destroy or restore: its values kept in its statement's
 * state (not for Sequelize's per-row hooks of a bulk statement, captured whole).
 */
export function keepSnapshot(
  ctx: CaptureContext,
): (instance: Instance, options: WriteOptions) => void {
  return (instance, options) => {
    if (partOfBulk(options, ctx.model, instance)) return;
    const statement = beginStatement(options, ctx.model);
    ctx.slotOf(statement).snapshot = { ...instance._previousDataValues };
  };
}

/** The values an instance had before its destroy or restore, kept by {@link keepSnapshot}. */
export function snapshotOf(ctx: CaptureContext, options: WriteOptions) {
  const statement = statementOf(options);
  return statement && ctx.slotOf(statement).snapshot;
}
