/**
 * What a delete reaches through foreign keys: the rows of captured models that the
 * database's own `ON DELETE CASCADE` deletes and its `ON DELETE SET NULL` / `SET DEFAULT`
 * updates, read before the delete so they can be captured (the reference: "what
 * `on_delete` reaches … the database's own `ON DELETE CASCADE`/`SET NULL` included").
 *
 * Why read first. The database runs no hook for the rows its cascade writes and Sequelize
 * sees none of them, so once the parent's DELETE has run they are gone. So a delete of any
 * model whose cascade reaches a captured model (the captured model itself, or one whose
 * foreign keys lead to one, however many levels down) reads the rows it will reach first,
 * in its transaction — on PostgreSQL `FOR UPDATE`, the parent rows too, so no child can be
 * inserted under them between the read and the DELETE — and writes their events after it.
 *
 * Where the graph comes from: every model's `rawAttributes[*].references` with its
 * `onDelete`, which both associations (`hasMany`, `hasOne`, `belongsTo`, `belongsToMany`'s
 * through model) and hand-declared `references` fill in. Associations with `hooks: true`
 * and `onDelete: 'CASCADE'` are destroyed by Sequelize itself, child instance by child
 * instance, before the parent's DELETE — those children's own hooks capture them, so such an
 * edge is not read (unless the child is paranoid and the destroy not forced: Sequelize then
 * soft-deletes it, and the database's cascade deletes it after — both are captured).
 */
import type { Transaction } from 'sequelize';
import type { Instance, ModelClass, Values } from './sequelize-model.js';

/** What the database does to a child row when its parent row is deleted. */
export type CascadeAction = 'CASCADE' | 'SET NULL' | 'SET DEFAULT';

/** One foreign key whose `ON DELETE` writes the rows of `child`. */
export interface CascadeEdge {
  readonly parent: ModelClass;
  readonly child: ModelClass;
  /** The child's attribute holding the key. */
  readonly foreignKey: string;
  /** The parent's attribute it references. */
  readonly key: string;
  readonly action: CascadeAction;
  /** Sequelize destroys these children itself through their instance hooks (`hooks: true`). */
  readonly hooks: boolean;
}

const ACTIONS: Record<string, CascadeAction> = {
  CASCADE: 'CASCADE',
  'SET NULL': 'SET NULL',
  'SET DEFAULT': 'SET DEFAULT',
};

interface Referencing {
  references?: { model?: unknown; key?: string } | string;
  onDelete?: string;
  field?: string;
}

function tableParts(table: unknown): { table: string; schema: string | undefined } | null {
  if (typeof table === 'string') return { table, schema: undefined };
  if (typeof table === 'object' && table !== null && 'tableName' in table) {
    const t = table as { tableName: string; schema?: string };
    return { table: t.tableName, schema: t.schema || undefined };
  }
  return null;
}

/** The model a `references.model` names: a model class, its name, or its table. */
function referencedModel(models: readonly ModelClass[], named: unknown): ModelClass | undefined {
  if (typeof named === 'function') return models.find((m) => (m as unknown) === named);
  const want = tableParts(named);
  if (!want) return undefined;
  return (
    models.find((m) => {
      const own = tableParts(m.getTableName());
      if (!own) return false;
      if (own.table !== want.table) return false;
      return want.schema === undefined || own.schema === undefined || own.schema === want.schema;
    }) ?? models.find((m) => m.name === want.table)
  );
}

function attributeOfField(model: ModelClass, field: string): string {
  for (const [name, attribute] of Object.entries(model.rawAttributes)) {
    if ((attribute.field ?? name) === field) return name;
  }
  return field;
}

/** Whether Sequelize destroys `child` rows itself when a `parent` instance is destroyed. */
function destroyedByHooks(parent: ModelClass, child: ModelClass, foreignKey: string): boolean {
  for (const association of Object.values(parent.associations ?? {})) {
    const options = association.options ?? {};
    if (
      association.target === child &&
      association.foreignKey === foreignKey &&
      (association.associationType === 'HasMany' || association.associationType === 'HasOne') &&
      options.useHooks === true &&
      String(options.onDelete ?? '').toUpperCase() === 'CASCADE'
    ) {
      return true;
    }
  }
  return false;
}

/** Every foreign key of the Sequelize's models with an `ON DELETE` that writes rows. */
export function cascadeEdges(models: readonly ModelClass[]): CascadeEdge[] {
  const edges: CascadeEdge[] = [];
  for (const child of models) {
    for (const [foreignKey, attribute] of Object.entries(
      child.rawAttributes as Record<string, Referencing>,
    )) {
      const action = ACTIONS[String(attribute.onDelete ?? '').toUpperCase()];
      const references = attribute.references;
      if (!action || !references) continue;
      const named = typeof references === 'string' ? references : references.model;
      const parent = referencedModel(models, named);
      if (!parent) continue;
      const keyField = typeof references === 'string' ? undefined : references.key;
      const key = keyField ? attributeOfField(parent, keyField) : parent.primaryKeyAttributes[0];
      if (!key) continue;
      edges.push({
        parent,
        child,
        foreignKey,
        key,
        action,
        hooks: action === 'CASCADE' && destroyedByHooks(parent, child, foreignKey),
      });
    }
  }
  return edges;
}

/**
 * The edges that matter to a capture, by parent: those that write a captured model's rows,
 * or delete rows of a model whose own edges do (a fixpoint, so cycles and self-references
 * end). A model with none here pays nothing for cascades.
 */
export function reachingEdges(
  edges: readonly CascadeEdge[],
  captured: (model: ModelClass) => boolean,
): Map<ModelClass, CascadeEdge[]> {
  const reaches = new Set<ModelClass>();
  let grew = true;
  while (grew) {
    grew = false;
    for (const e of edges) {
      if (reaches.has(e.parent)) continue;
      const writesCaptured = captured(e.child);
      if (writesCaptured || (e.action === 'CASCADE' && reaches.has(e.child))) {
        reaches.add(e.parent);
        grew = true;
      }
    }
  }
  const out = new Map<ModelClass, CascadeEdge[]>();
  for (const e of edges) {
    if (!reaches.has(e.parent)) continue;
    const relevant = captured(e.child) || (e.action === 'CASCADE' && reaches.has(e.child));
    if (!relevant) continue;
    const list = out.get(e.parent) ?? [];
    list.push(e);
    out.set(e.parent, list);
  }
  return out;
}

/** The rows a delete reaches, read before it. */
export interface CascadePlan {
  /** Rows the database's cascade deletes, per captured model. */
  readonly deleted: Map<ModelClass, Instance[]>;
  /** Rows its SET NULL / SET DEFAULT updates, per edge (captured children only). */
  readonly updated: { edge: CascadeEdge; rows: Instance[] }[];
}

/** How the reads run. */
export interface CascadeRead {
  readonly edgesFrom: (model: ModelClass) => readonly CascadeEdge[];
  /** Whether the model is captured, and with `keys` only (its reads need only keys). */
  readonly captureOf: (model: ModelClass) => { keysOnly: boolean } | undefined;
  readonly lock: boolean;
  readonly transaction: Transaction | null | undefined;
  readonly logging: unknown;
  /** Sequelize destroys the root's `hooks: true` children itself (an instance destroy). */
  readonly hooksRun: boolean;
  readonly force: boolean;
}

/** The model without its default scope: the database's cascade reaches rows out of it. */
export function unscoped(model: ModelClass): ModelClass {
  return model.unscoped?.() ?? model;
}

function idOf(model: ModelClass, values: Values): string {
  return model.primaryKeyAttributes.map((k) => String(values[k])).join('\u0000');
}

function isParanoid(model: ModelClass): boolean {
  return model._timestampAttributes.deletedAt !== undefined;
}

/**
 * Read every row a delete of `rows` of `root` reaches, level by level (one SELECT per edge
 * and level, each of the keys of all the rows of the level before), in the write's
 * transaction. Rows already reached are not followed again, so a self-referencing tree
 * ends.
 */
export async function readCascade(
  root: ModelClass,
  rows: readonly Values[],
  read: CascadeRead,
): Promise<CascadePlan> {
  const plan: CascadePlan = { deleted: new Map(), updated: [] };
  const seen = new Map<ModelClass, Set<string>>([[root, new Set(rows.map((r) => idOf(root, r)))]]);
  let frontier: { model: ModelClass; rows: readonly Values[]; root: boolean }[] = [
    { model: root, rows, root: true },
  ];
  while (frontier.length > 0) {
    const next: typeof frontier = [];
    for (const level of frontier) {
      for (const edge of read.edgesFrom(level.model)) {
        if (level.root && read.hooksRun && edge.hooks && (read.force || !isParanoid(edge.child))) {
          continue; // Sequelize destroys these through their own hooks
        }
        const keys = [
          ...new Set(
            level.rows.map((r) => r[edge.key]).filter((v) => v !== null && v !== undefined),
          ),
        ];
        if (keys.length === 0) continue;
        const captured = read.captureOf(edge.child);
        if (!captured && edge.action !== 'CASCADE') continue;
        const needed = new Set<string>(edge.child.primaryKeyAttributes);
        for (const e of read.edgesFrom(edge.child)) needed.add(e.key);
        const attributes =
          captured && !captured.keysOnly ? Object.keys(edge.child.rawAttributes) : [...needed];
        const found = await unscoped(edge.child).findAll({
          where: { [edge.foreignKey]: keys },
          attributes,
          paranoid: false,
          transaction: read.transaction,
          ...(read.lock && read.transaction ? { lock: 'UPDATE' } : {}),
          logging: read.logging,
        });
        if (edge.action !== 'CASCADE') {
          if (found.length > 0) plan.updated.push({ edge, rows: found });
          continue;
        }
        const ids = seen.get(edge.child) ?? new Set<string>();
        seen.set(edge.child, ids);
        const fresh = found.filter((r) => {
          const id = idOf(edge.child, r.dataValues);
          if (ids.has(id)) return false;
          ids.add(id);
          return true;
        });
        if (fresh.length === 0) continue;
        if (captured)
          plan.deleted.set(edge.child, [...(plan.deleted.get(edge.child) ?? []), ...fresh]);
        next.push({ model: edge.child, rows: fresh.map((r) => r.dataValues), root: false });
      }
    }
    frontier = next;
  }
  // A row both deleted and set null (two parents deleted) is deleted.
  for (const u of plan.updated) {
    const gone = seen.get(u.edge.child);
    if (gone) u.rows = u.rows.filter((r) => !gone.has(idOf(u.edge.child, r.dataValues)));
  }
  return plan;
}
