/**
 * Install change capture on a Sequelize: hooks per write kind for each captured model, and
 * a transaction around each of its writes.
 *
 * Why both. The hooks see each write with its rows and options (Sequelize 6 runs them
 * inside the write, with `options.transaction`), so the events are written in the write's
 * transaction. But a write outside any transaction runs in autocommit, and Sequelize has
 * no hook for a failed write, so a transaction opened in a before hook could never be
 * rolled back. So the model's write methods are wrapped (./wrap.ts): without a
 * transaction the write runs in one opened for it; inside one, in a SAVEPOINT, so an event
 * that fails after its row is written undoes the write even when the caller catches the
 * error and goes on in its transaction (./transaction.ts).
 *
 * One module per write kind, each adding its hooks (or its wrapper's capturers):
 * ./create-save.ts, ./bulk-update.ts, ./destroy.ts, ./restore.ts, ./bulk-create.ts,
 * ./upsert.ts, ./increment.ts; what a delete reaches through foreign keys,
 * ./cascade-hooks.ts. A `belongsToMany`'s through rows are its through model's own writes
 * (`bulkCreate`, `update`, `destroy`), captured as those. What a statement's hooks share
 * is its `Statement` (./statement.ts); what the dialect can do, ./capabilities.ts.
 */
import type { Sequelize } from 'sequelize';
import type { ResolvedCapture } from '../declare/capture.js';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import { runtimeOf } from '../runtime.js';
import { captureBulkCreate } from './bulk-create.js';
import { captureBulkUpdate } from './bulk-update.js';
import { installCascades } from './cascade-hooks.js';
import { captureContext } from './context.js';
import { captureCreateAndSave } from './create-save.js';
import { captureDestroy } from './destroy.js';
import { captureIncrement } from './increment.js';
import { capturesOf } from './model-captures.js';
import { captureRestore } from './restore.js';
import type { ModelClass } from './sequelize-model.js';
import { quietCapture } from './unguarded.js';
import { captureUpsert } from './upsert.js';
import { wrapWrites } from './wrap.js';

/**
 * Register the hooks of every model the outbox's config captures, on `sequelize` (the
 * outbox's own). Idempotent: a second call for the same outbox adds nothing.
 *
 * @throws {ConfigurationError} for a captured model not defined on that Sequelize (its
 * events would commit on other connections than its rows), or another Sequelize than the
 * outbox's.
 */
export function installCapture(outbox: object, sequelize?: Sequelize): void {
  const rt = runtimeOf(outbox);
  const on = sequelize ?? rt.sequelize;
  if (on !== rt.sequelize) {
    throw new ConfigurationError(
      "installCapture(outbox, sequelize): the Sequelize must be the outbox's own: a captured row's events commit in its write's transaction",
      { path: 'sequelize' },
    );
  }
  for (const capture of rt.config.captures) {
    const model = capture.model as unknown as ModelClass;
    const defined = (on as unknown as { models: Record<string, unknown> }).models[model.name];
    if (defined !== model) {
      throw new ConfigurationError(
        `installCapture: the captured model ${model.name} is not defined on this Sequelize (sequelize.define or Model.init with it); define it there, or drop its capture`,
        { path: `capture(${model.name})` },
      );
    }
    const captures = capturesOf(model);
    if (captures.installedFor.has(rt)) continue;
    captures.installedFor.add(rt);
    if (!quietCapture(rt, capture)) captures.loud = true;
    wrapWrites(model, on);
    addHooks(rt, capture, model);
  }
  installCascades(rt, on, (parent) => wrapWrites(parent, on, ['destroy']));
}

/** This outbox's capture of `model`, write kind by write kind. */
function addHooks(rt: Runtime, capture: ResolvedCapture, model: ModelClass): void {
  const ctx = captureContext(rt, capture, model);
  captureCreateAndSave(ctx);
  captureDestroy(ctx);
  captureRestore(ctx);
  captureBulkCreate(ctx);
  captureUpsert(ctx);
  captureIncrement(ctx);
  captureBulkUpdate(ctx);
}
