/**
 * The warning for a capture declared and never installed: a config with `capture(Model)`
 * and no `installCapture(outbox)` call writes no captured event, and nothing else says so.
 *
 * Why at the first write rather than at `createOutbox`: an outbox is often made before the
 * app gets round to installing capture (after an `await`, in a test's `beforeAll`), and a
 * relay or CLI outbox never installs it and never needs to; a warning after "the first
 * tick" would cry wolf in all of them. The first write of a captured model that this
 * outbox's capture does not see is exactly the moment an event goes missing, so the
 * warning comes then, once per outbox, through its logger.
 *
 * How: a `before` hook per write kind on each captured model, named for this outbox, that
 * looks whether the outbox installed its capture; the first write removes them all (with a
 * warning when it was not installed), so a captured write pays for it once.
 */
import type { Runtime } from '../runtime.js';
import { capturesOf } from './model-captures.js';
import type { ModelClass } from './sequelize-model.js';

/** The hooks Sequelize 6 runs before each write kind capture turns into events. */
const WRITE_HOOKS = [
  'beforeSave',
  'beforeDestroy',
  'beforeRestore',
  'beforeUpsert',
  'beforeBulkCreate',
  'beforeBulkUpdate',
  'beforeBulkDestroy',
  'beforeBulkRestore',
] as const;

let outboxes = 0;

/**
 * Watch the models `rt`'s config captures until their first write; returns what removes
 * the watch (the outbox's `close()` calls it). Nothing for a config without captures.
 */
export function warnWhenCaptureUninstalled(rt: Runtime): () => void {
  const models = rt.config.captures.map((c) => c.model as unknown as ModelClass);
  if (models.length === 0) return () => {};
  const name = `outboxkit:uninstalled-capture:${++outboxes}`;
  let watching = true;
  const unwatch = () => {
    if (!watching) return;
    watching = false;
    for (const model of models)
      for (const type of WRITE_HOOKS) (model as unknown as HookRemover).removeHook?.(type, name);
  };
  for (const model of models) {
    for (const type of WRITE_HOOKS) {
      model.addHook(type, name, () => {
        if (!watching) return;
        unwatch();
        if (capturesOf(model).installedFor.has(rt)) return;
        rt.logger.warn(
          `change capture is declared for ${model.name} (capture(${model.name})), but installCapture(outbox) was never called for this outbox: this write (${type.replace(/^before/, '').replace(/^./, (c) => c.toLowerCase())}) and every captured write after it records no event. Call installCapture(outbox) once at start-up, after createOutbox (the generated file exports one that installs exactly the captured models)`,
          { model: model.name, hook: type },
        );
      });
    }
  }
  return unwatch;
}

interface HookRemover {
  removeHook?(type: string, name: string): void;
}
