/**
 * `Model.upsert`: `inserted` or `updated`, as the database did it. Sequelize tells neither
 * dialect's outcome (`created` is null; SQLite's id is the last insert's), so the row of
 * its conflict key is read after the write — and before it where needed (where the row
 * cannot tell the outcome: the outcome; a before-image) — in its transaction; where the
 * dialect's row tells (`upsertUpdatedSql`, PostgreSQL's `xmax <> 0`), it says whether ON
 * CONFLICT updated it.
 */
import { keyText, upsertConflictKey } from './conflict.js';
import type { CaptureContext } from './context.js';
import { readByKey, UPDATED_BY_UPSERT } from './reads.js';
import type { Instance, Values } from './sequelize-model.js';
import { beginStatement, statementOf } from './statement.js';

export function captureUpsert(ctx: CaptureContext): void {
  const { model, capture, capabilities } = ctx;
  const tells = capabilities.upsertUpdatedSql !== null;
  const needsReadFirst = !tells || capture.payload === 'beforeAndAfter';
  ctx.onRows('beforeUpsert', async (values: Values, options) => {
    const built = (options.instance as Instance | undefined)?.dataValues ?? {};
    const row = { ...built, ...values };
    const key = upsertConflictKey(model, row, options.conflictFields as string[] | undefined);
    const slot = ctx.slotOf(beginStatement(options, model));
    slot.given = [row];
    slot.conflictKey = key;
    if (needsReadFirst) {
      slot.readFirst = await readByKey(ctx, key, [row], options, { lock: true, askUpdated: false });
    }
  });
  ctx.onRows('afterUpsert', async ([instance]: [Instance], options) => {
    const statement = statementOf(options);
    const slot = statement ? ctx.slotOf(statement) : {};
    let key = slot.conflictKey ?? model.primaryKeyAttributes;
    let [row] = slot.given ?? [];
    if (!row || keyText(key, row) === null) {
      // No conflict key in the values: only the statement's RETURNING names the row.
      key = model.primaryKeyAttributes;
      row = instance.dataValues;
    }
    const [before] = slot.readFirst ?? [];
    const read = { lock: false, askUpdated: true };
    const [after] = await readByKey(ctx, key, [row], options, read);
    const wasUpdate =
      after && tells ? after.dataValues[UPDATED_BY_UPSERT] === true : before !== undefined;
    const image = after?.dataValues ?? instance.dataValues;
    if (!wasUpdate) return ctx.write('inserted', [{ after: image }], options);
    const change = {
      before: before?.dataValues ?? null,
      after: image,
      changed: ctx.withoutStamps(options.fields),
    };
    return ctx.write('updated', [change], options);
  });
}
