/**
 * The hooks that capture what a delete reaches through foreign keys (the graph and the
 * reads are ./cascade.ts): on every model whose deletes reach a captured one, captured or
 * not, the rows reached are read before the delete and their events written after it, in
 * its transaction.
 */
import type { Sequelize } from 'sequelize';
import type { ResolvedCapture } from '../declare/capture.js';
import type { Runtime } from '../runtime.js';
import { captureCapabilities } from './capabilities.js';
import {
  type CascadeEdge,
  type CascadePlan,
  type CascadeRead,
  cascadeEdges,
  reachingEdges,
  readCascade,
  unscoped,
} from './cascade.js';
import { changeOf } from './envelope.js';
import { capturesOf } from './model-captures.js';
import type { Instance, ModelClass, Values, WriteOptions } from './sequelize-model.js';
import { beginStatement, partOfBulk, statementOf } from './statement.js';
import { writeChanges } from './write.js';

type Options = WriteOptions;

/**
 * Hooks on every model whose deletes reach a captured model through the database's own
 * `ON DELETE CASCADE` / `SET NULL` / `SET DEFAULT` (see ./cascade.ts): the rows reached
 * are read before the delete and captured after it, in its transaction. The models and
 * their associations must be defined before `installCapture`.
 */
export function installCascades(
  rt: Runtime,
  sequelize: Sequelize,
  wrapDestroys: (model: ModelClass) => void,
): void {
  const captures = new Map<ModelClass, ResolvedCapture>(
    rt.config.captures.map((c) => [c.model as unknown as ModelClass, c]),
  );
  const models = Object.values(
    (sequelize as unknown as { models: Record<string, ModelClass> }).models,
  );
  const edges = reachingEdges(cascadeEdges(models), (m) => captures.has(m));
  for (const parent of edges.keys()) {
    const done = capturesOf(parent).cascadesFor;
    if (done.has(rt)) continue;
    done.add(rt);
    wrapDestroys(parent); // their transaction: the reads, the DELETE and the events in one
    addCascadeHooks(rt, parent, edges, captures);
  }
}

function addCascadeHooks(
  rt: Runtime,
  parent: ModelClass,
  edges: ReadonlyMap<ModelClass, readonly CascadeEdge[]>,
  captures: ReadonlyMap<ModelClass, ResolvedCapture>,
): void {
  const name = `outboxkit:cascade:${rt.processId}`;
  const { rowLocks } = captureCapabilities(rt.sequelize);
  const paranoid = parent._timestampAttributes.deletedAt !== undefined;
  const needed = [
    ...new Set([...parent.primaryKeyAttributes, ...(edges.get(parent) ?? []).map((e) => e.key)]),
  ];
  const readOf = (options: Options, hooksRun: boolean): CascadeRead => ({
    edgesFrom: (m) => edges.get(m) ?? [],
    captureOf: (m) => {
      const c = captures.get(m);
      return c && { keysOnly: c.payload === 'keys' };
    },
    lock: rowLocks,
    transaction: options.transaction,
    logging: options.logging,
    hooksRun,
    force: Boolean(options.force),
  });
  const readRoots = (where: unknown, options: Options): Promise<Instance[]> =>
    unscoped(parent).findAll({
      where,
      attributes: needed,
      paranoid: false,
      transaction: options.transaction,
      ...(rowLocks && options.transaction ? { lock: 'UPDATE' } : {}),
      logging: options.logging,
    });
  const keep = (options: Options, plan: CascadePlan) => {
    beginStatement(options, parent).slot(rt).cascade = plan;
  };
  const write = async (options: Options) => {
    const plan = statementOf(options)?.slot(rt).cascade;
    if (plan) await writeCascade(rt, plan, captures, options);
  };
  const hook = (type: string, fn: (...args: never[]) => unknown) => parent.addHook(type, name, fn);
  hook('beforeDestroy', (async (instance: Instance, options: Options) => {
    if (partOfBulk(options, parent, instance) || (paranoid && !options.force)) return; // a soft delete cascades nothing
    let roots: Values[] = [instance.dataValues];
    if (rowLocks && options.transaction) {
      // Lock the parent row: no child is inserted under it between the reads and the DELETE.
      const where = Object.fromEntries(
        parent.primaryKeyAttributes.map((k) => [k, instance.dataValues[k]]),
      );
      roots = (await readRoots(where, options)).map((r) => r.dataValues);
    }
    keep(options, await readCascade(parent, roots, readOf(options, true)));
  }) as never);
  hook('beforeBulkDestroy', (async (options: Options) => {
    beginStatement(options, parent).bulk = true; // its per-row hooks (individualHooks) cascade nothing of their own
    if (paranoid && !options.force) return;
    const roots = (await readRoots(options.where, options)).map((r) => r.dataValues);
    keep(options, await readCascade(parent, roots, readOf(options, false)));
  }) as never);
  hook('afterDestroy', ((instance: Instance, options: Options) =>
    partOfBulk(options, parent, instance) ? undefined : write(options)) as never);
  hook('afterBulkDestroy', ((options: Options) => write(options)) as never);
}

/** The events of the rows a delete reached: one fire per model (and per SET NULL key). */
async function writeCascade(
  rt: Runtime,
  plan: CascadePlan,
  captures: ReadonlyMap<ModelClass, ResolvedCapture>,
  options: Options,
): Promise<void> {
  const at = rt.clock();
  for (const [model, rows] of plan.deleted) {
    const capture = captures.get(model);
    if (!capture?.operations.has('deleted')) continue;
    const changes = rows.map((r) => changeOf(capture, 'deleted', { before: r.dataValues }, at));
    await writeChanges(rt, capture, changes, options.transaction);
  }
  for (const { edge, rows } of plan.updated) {
    const capture = captures.get(edge.child);
    if (!capture || rows.length === 0 || !capture.operations.has('updated')) continue;
    const child = edge.child;
    const id = (v: Values) => child.primaryKeyAttributes.map((k) => String(v[k])).join('\u0000');
    let after = new Map<string, Values>();
    if (capture.payload === 'keys') {
      after = new Map(rows.map((r) => [id(r.dataValues), r.dataValues]));
    } else {
      // The values the database set (NULL, or the column's DEFAULT), read back by key.
      const [key] = child.primaryKeyAttributes;
      const where =
        child.primaryKeyAttributes.length === 1 && key
          ? { [key]: rows.map((r) => r.dataValues[key]) }
          : {
              [Symbol.for('or')]: rows.map((r) =>
                Object.fromEntries(child.primaryKeyAttributes.map((k) => [k, r.dataValues[k]])),
              ),
            };
      const fresh = await unscoped(child).findAll({
        where,
        paranoid: false,
        transaction: options.transaction,
        logging: options.logging,
      });
      after = new Map(fresh.map((r) => [id(r.dataValues), r.dataValues]));
    }
    const changes = rows.map((r) =>
      changeOf(
        capture,
        'updated',
        {
          before: r.dataValues,
          after: after.get(id(r.dataValues)) ?? null,
          changed: [edge.foreignKey],
        },
        at,
      ),
    );
    await writeChanges(rt, capture, changes, options.transaction);
  }
}
