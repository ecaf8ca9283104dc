/**
 * The conflict key of an upsert (`Model.upsert`, `bulkCreate` with `updateOnDuplicate` or
 * `ignoreDuplicates`): the attributes whose values decide whether a row is inserted,
 * updated or skipped — chosen the way Sequelize 6 chooses its `ON CONFLICT` target, so the
 * rows capture reads before and after the statement are the ones the database compared.
 *
 * Why capture needs it: Sequelize 6 reports neither which rows an upsert inserted (its
 * `created` is `null` on PostgreSQL and SQLite) nor, on SQLite, the keys of the rows an
 * upsert updated (it numbers them from the last insert id). So capture reads the rows of
 * those keys in the write's transaction — before it (which existed) and after it (what
 * the write left) — and on PostgreSQL asks the row itself (`xmax <> 0`: a row version an
 * `ON CONFLICT DO UPDATE` wrote, where a fresh insert has 0). Pure: no statement here.
 */

type Values = Record<string, unknown>;

/** What the conflict key reads of a Sequelize 6 model class. */
export interface ConflictModel {
  readonly primaryKeyAttributes: readonly string[];
  readonly rawAttributes: Record<string, { field?: string }>;
  readonly uniqueKeys?: Record<string, { fields: readonly string[] }>;
  readonly _indexes?: readonly { unique?: boolean; where?: unknown; fields: readonly unknown[] }[];
}

function attributeOf(model: ConflictModel, field: string): string {
  for (const [name, attribute] of Object.entries(model.rawAttributes)) {
    if ((attribute.field ?? name) === field) return name;
  }
  return field;
}

function fieldName(field: unknown): string {
  if (typeof field === 'string') return field;
  const named = field as { attribute?: string; name?: string };
  return named.attribute ?? named.name ?? String(field);
}

/** The unique constraints of a model (unique indexes, then `unique:` attributes), as attribute lists. */
function uniqueKeysOf(model: ConflictModel): string[][] {
  const keys: string[][] = [];
  for (const index of model._indexes ?? []) {
    if (index.unique && !index.where && index.fields.length > 0) {
      keys.push(index.fields.map((f) => attributeOf(model, fieldName(f))));
    }
  }
  for (const key of Object.values(model.uniqueKeys ?? {})) {
    if (key.fields.length > 0) keys.push(key.fields.map((f) => attributeOf(model, f)));
  }
  return keys;
}

/**
 * The conflict key of one `upsert(values, options)`: `options.conflictFields` when given,
 * the primary key when the values hold it, else the first unique key the values fill.
 */
export function upsertConflictKey(
  model: ConflictModel,
  values: Values,
  conflictFields: readonly string[] | undefined,
): readonly string[] {
  if (conflictFields?.length) return conflictFields.map((f) => attributeOf(model, f));
  const has = (key: readonly string[]) =>
    key.every((k) => values[k] !== undefined && values[k] !== null);
  if (has(model.primaryKeyAttributes)) return model.primaryKeyAttributes;
  return uniqueKeysOf(model).find(has) ?? model.primaryKeyAttributes;
}

/**
 * The conflict key of one `bulkCreate` with `updateOnDuplicate`/`ignoreDuplicates`:
 * `options.conflictAttributes`, else the first unique key, else the primary key.
 */
export function bulkConflictKey(
  model: ConflictModel,
  conflictAttributes: readonly string[] | undefined,
): readonly string[] {
  if (conflictAttributes?.length) return conflictAttributes;
  return uniqueKeysOf(model)[0] ?? model.primaryKeyAttributes;
}

/** The text of a row's conflict key (null when one of its values is missing: no conflict possible). */
export function keyText(key: readonly string[], values: Values): string | null {
  const parts: string[] = [];
  for (const k of key) {
    const value = values[k];
    if (value === undefined || value === null) return null;
    parts.push(value instanceof Date ? value.toISOString() : String(value));
  }
  return parts.join('\u0000');
}

/**
 * A `where` matching the rows of these values' conflict keys (`{ k: [...] }` for one
 * attribute, an `Op.or` of objects for several), or null when none has a whole key.
 */
export function keyWhere(key: readonly string[], rows: readonly Values[]): Values | null {
  const keyed = rows.filter((r) => keyText(key, r) !== null);
  if (keyed.length === 0) return null;
  const [only] = key;
  if (key.length === 1 && only !== undefined) return { [only]: keyed.map((r) => r[only]) };
  return {
    [Symbol.for('or')]: keyed.map((r) => Object.fromEntries(key.map((k) => [k, r[k]]))),
  };
}
