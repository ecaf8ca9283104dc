/**
 * `Model.create`, `instance.save()` (an insert or an update) and `instance.update`: the
 * instance holds the row as written and, for an update, as it was
 * (`_previousDataValues`), so nothing is read. Sequelize's per-row hooks of a bulk
 * statement (`individualHooks`) are captured with their statement, not here.
 */
import type { CaptureContext } from './context.js';
import { partOfBulk } from './statement.js';

export function captureCreateAndSave(ctx: CaptureContext): void {
  const { model } = ctx;
  ctx.onInstance('afterCreate', (instance, options) => {
    if (partOfBulk(options, model, instance)) return undefined;
    return ctx.write('inserted', [{ after: instance.dataValues }], options);
  });
  ctx.onInstance('afterUpdate', (instance, options) => {
    if (partOfBulk(options, model, instance)) return undefined;
    const change = {
      before: instance._previousDataValues,
      after: instance.dataValues,
      changed: ctx.withoutStamps(options.fields),
    };
    return ctx.write('updated', [change], options);
  });
}
