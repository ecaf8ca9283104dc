/**
 * `Model.update` (with or without `individualHooks`): `updated` per matched row, `changed`
 * the keys of its values. Where the dialect's UPDATE hands back its rows, the wrapper runs
 * it with RETURNING (./returning.ts) and the rows it gave are the `after` images; else the
 * matched rows are read first and re-read by key after.
 */
import { type CaptureContext, pairedByIndex } from './context.js';
import { capturesOf } from './model-captures.js';
import { readMatchedFirst, reread } from './reads.js';
import { fromReturning } from './returning.js';
import type { Values } from './sequelize-model.js';
import { statementOf } from './statement.js';

export function captureBulkUpdate(ctx: CaptureContext): void {
  const changedOf = (values: unknown) =>
    ctx.withoutStamps(Object.keys((values as Values | undefined) ?? {}));
  ctx.onStatement('beforeBulkUpdate', readMatchedFirst(ctx, 'update'));
  capturesOf(ctx.model).returning.update.push(fromReturning(ctx, changedOf));
  ctx.onStatement('afterBulkUpdate', async (options) => {
    const statement = statementOf(options);
    if (!statement || statement.returning) return undefined; // written by capturingReturning
    const rows = ctx.slotOf(statement).readFirst ?? [];
    const after = await reread(ctx, rows, options);
    const changed = changedOf(options.attributes);
    return ctx.write(
      'updated',
      pairedByIndex(rows, after, changed, { unpairedBefore: 'null' }),
      options,
    );
  });
}
