/**
 * Which captured writes may run without a savepoint in the caller's root transaction (see
 * ./transaction.ts): an insert or a plain `bulkCreate` of a model whose captures are quiet
 * (nothing of the user's runs after the row), without `include` (its associated rows are
 * saved after the row) and without other after-hooks. The rest (updates, deletes, upserts,
 * conflicts, cascades) keep theirs.
 */
import type { ResolvedCapture } from '../declare/capture.js';
import type { Runtime } from '../runtime.js';
import { capturesIfAny } from './model-captures.js';
import type { ModelClass } from './sequelize-model.js';
import type { Unguarded } from './transaction.js';

/** Whether nothing of the user's runs when this capture writes a change's events. */
export function quietCapture(rt: Runtime, capture: ResolvedCapture): boolean {
  if (capture.extend || capture.extendMany || capture.topicOf) return false;
  if (capture.sinks.length > 0) return false; // a sink is the app's code, after the row
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

const loud = (model: ModelClass) => capturesIfAny(model)?.loud ?? false;

/** The static writes that may go unguarded, by method name. */
export const UNGUARDED_STATIC: Readonly<Record<string, Unguarded | undefined>> = {
  create: (self, _args, options) => {
    const model = self as ModelClass;
    return !loud(model) && !options.include && onlyOurHooks(model, ['afterCreate', 'afterUpdate']);
  },
  bulkCreate: (self, _args, options) => {
    const model = self as ModelClass;
    return (
      !loud(model) &&
      !options.include &&
      !options.updateOnDuplicate &&
      !options.ignoreDuplicates &&
      onlyOurHooks(model, ['afterBulkCreate', 'afterCreate', 'afterUpdate'])
    );
  },
};

/** `instance.save()`: an insert or an update, the same conditions as `create`. */
export const unguardedSave: Unguarded = (self) => {
  const instance = self as { constructor: ModelClass; _options?: { include?: unknown[] } };
  const model = instance.constructor;
  return (
    !loud(model) &&
    !instance._options?.include?.length &&
    onlyOurHooks(model, ['afterCreate', 'afterUpdate'])
  );
};
