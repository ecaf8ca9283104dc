/**
 * `instance.restore()` and `Model.restore` of a paranoid model: `updated`, `changed`
 * `['deletedAt']`. An instance's values are kept before its restore (Sequelize resets them
 * before the after-hook); a static restore is an UPDATE — run with RETURNING where the
 * dialect hands its rows back (./returning.ts), else read first and re-read by key.
 */
import { type CaptureContext, pairedByIndex } from './context.js';
import { keepSnapshot, snapshotOf } from './destroy.js';
import { capturesOf } from './model-captures.js';
import { readMatchedFirst, reread } from './reads.js';
import { fromReturning } from './returning.js';
import { partOfBulk, statementOf } from './statement.js';

export function captureRestore(ctx: CaptureContext): void {
  const { model, deletedAt } = ctx;
  ctx.onInstance('beforeRestore', keepSnapshot(ctx));
  ctx.onInstance('afterRestore', (instance, options) => {
    if (partOfBulk(options, model, instance)) return undefined;
    const before = snapshotOf(ctx, options) ?? instance.dataValues;
    const change = { before, after: instance.dataValues, changed: [deletedAt!] };
    return ctx.write('updated', [change], options);
  });
  ctx.onStatement('beforeBulkRestore', readMatchedFirst(ctx, 'restore'));
  if (deletedAt) {
    capturesOf(model).returning.restore.push(fromReturning(ctx, () => [deletedAt]));
  }
  ctx.onStatement('afterBulkRestore', async (options) => {
    const statement = statementOf(options);
    if (!statement || statement.returning) return undefined; // written by capturingReturning
    const rows = ctx.slotOf(statement).readFirst ?? [];
    const after = await reread(ctx, rows, options);
    return ctx.write(
      'updated',
      pairedByIndex(rows, after, [deletedAt!], { unpairedBefore: 'byIndex' }),
      options,
    );
  });
}
