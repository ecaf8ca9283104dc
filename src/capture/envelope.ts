/**
 * The change envelope of a captured row, in JSON form: what the reference's payload holds
 * (`model`, `operation`, `pk`, `changed`, `before`, `after`, `occurred_at`), and the
 * ordering key of its row. Pure: no statement runs here.
 */
import { createHash } from 'node:crypto';
import {
  type AttributeKind,
  attributeKind,
  type CapturedChange,
  type CaptureOperation,
  type ResolvedCapture,
} from '../declare/capture.js';
import { ValidationError } from '../errors/outbox-error.js';

const MAX_KEY = 255;

/** The types whose values JSON would change: kept as text (decimals, big integers). */
const AS_TEXT: ReadonlySet<string> = new Set(['DECIMAL', 'BIGINT']);

/**
 * One attribute value in its JSON form: dates as ISO text, decimals and big integers as
 * text (a float would lose digits), buffers as base64, NaN and infinities as their text,
 * JSON as is.
 */
export function jsonForm(value: unknown, typeKey: string | undefined, scale?: number): unknown {
  if (value === undefined || value === null) return null;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (Buffer.isBuffer(value)) return value.toString('base64');
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    // SQLite hands a DECIMAL back as a number: its declared scale gives the text PostgreSQL has.
    if (typeKey === 'DECIMAL' && scale !== undefined) return value.toFixed(scale);
    if (typeKey !== undefined && AS_TEXT.has(typeKey)) return String(value);
    if (!Number.isFinite(value)) return String(value);
    return value;
  }
  if (typeKey === 'BOOLEAN' && (value === 0 || value === 1)) return value === 1;
  if (typeKey === 'RANGE' && Array.isArray(value) && value.length === 2) return rangeForm(value);
  return value;
}

/**
 * A PostgreSQL range in ONE JSON form, whichever way Sequelize holds it: the bounds pair
 * `[{ value, inclusive }, { value, inclusive }]` it reads back from the database, also for
 * a range the app set as plain bounds (`[10, 20]`, which Sequelize writes as `[10,20)`):
 * an update's `after` holds the values as set, an insert's what RETURNING read, and a
 * consumer must not see two shapes of one column. Each bound's value in its JSON form (a
 * date as ISO text); an empty range (`[]`) stays as it is.
 */
function rangeForm(bounds: readonly unknown[]): unknown[] {
  return bounds.map((bound, i) => {
    if (typeof bound === 'object' && bound !== null && 'value' in bound) {
      const b = bound as { value: unknown; inclusive?: unknown };
      const inclusive = typeof b.inclusive === 'boolean' ? b.inclusive : i === 0;
      return { value: jsonForm(b.value, undefined), inclusive };
    }
    return { value: jsonForm(bound, undefined), inclusive: i === 0 };
  });
}

/** An attribute as the envelope writes it: its name, type key and (decimals) scale. */
interface Column {
  readonly name: string;
  readonly typeKey: string | undefined;
  readonly scale: number | undefined;
}

/**
 * The capture's fields and key, each with its type, worked out once per capture (not per row).
 *
 * JUSTIFIED module-level caches (this one, `keyTemplates` and `kindCache` below): keyed by
 * a resolved capture — a declaration, immutable once resolved — each holds what is derived
 * from it alone, the same for every write, so no write's state is kept here. Weak: a
 * config nobody holds takes its entries with it.
 */
const columnCache = new WeakMap<ResolvedCapture, { fields: Column[]; key: Column[] }>();
function columnsOf(capture: ResolvedCapture): { fields: Column[]; key: Column[] } {
  let columns = columnCache.get(capture);
  if (!columns) {
    const attributes = capture.model.getAttributes?.() ?? {};
    const column = (name: string): Column => {
      const type = attributes[name]?.type;
      return { name, typeKey: typeKey(type), scale: scaleOf(type) };
    };
    columns = { fields: capture.fields.map(column), key: capture.primaryKey.map(column) };
    columnCache.set(capture, columns);
  }
  return columns;
}

/** The captured attributes of a row (an instance's data values), each in its JSON form. */
export function rowImage(
  capture: ResolvedCapture,
  values: Record<string, unknown> | null | undefined,
): Record<string, unknown> | null {
  if (!values) return null;
  const image: Record<string, unknown> = {};
  for (const c of columnsOf(capture).fields)
    image[c.name] = jsonForm(values[c.name], c.typeKey, c.scale);
  return image;
}

function scaleOf(type: unknown): number | undefined {
  const scale = (type as { options?: { scale?: unknown } } | undefined)?.options?.scale;
  return typeof scale === 'number' ? scale : undefined;
}

function typeKey(type: unknown): string | undefined {
  return (type as { key?: string } | undefined)?.key;
}

/** A row's key: its value, or an object of its fields for a composite key. */
export function pkOf(capture: ResolvedCapture, values: Record<string, unknown>): unknown {
  const key = columnsOf(capture).key;
  const form = (c: Column) => jsonForm(values[c.name], c.typeKey);
  if (key.length === 1) return form(key[0]!);
  return Object.fromEntries(key.map((c) => [c.name, form(c)]));
}

/** The key's text for `{pk}`: a composite key's parts joined by `:`. */
function pkText(capture: ResolvedCapture, pk: unknown): string {
  if (capture.primaryKey.length === 1) return String(pk);
  const parts = pk as Record<string, unknown>;
  return capture.primaryKey.map((k) => String(parts[k])).join(':');
}

/**
 * The ordering key of a change from the capture's template; over 255 characters its start,
 * `#` and the SHA-256 of the whole key, so a long text key still orders its own row. A
 * function's key is the caller's own: over 255 characters it fails the write.
 */
export function orderingKeyOf(
  capture: ResolvedCapture,
  change: CapturedChange,
): string | undefined {
  if (capture.orderingKey === null) return undefined;
  if (typeof capture.orderingKey === 'function') {
    const key = capture.orderingKey(change);
    if (key === null || key === undefined) return undefined;
    if (typeof key !== 'string' || key.length > MAX_KEY) {
      const where = `capture(${capture.model.name}).orderingKey`;
      throw new ValidationError(
        typeof key !== 'string'
          ? `${where} returned ${typeof key}; return a string or null`
          : `${where} returned a key of ${key.length} characters; an ordering key has at most ${MAX_KEY} (a template's longer keys are hashed, a function's are refused)`,
        { path: where },
      );
    }
    return key;
  }
  const key = keyTemplateOf(capture)(pkText(capture, change.pk));
  if (key.length <= MAX_KEY) return key;
  const digest = createHash('sha256').update(key).digest('hex');
  return `${key.slice(0, MAX_KEY - digest.length - 1)}#${digest}`;
}

/**
 * The capture's ordering-key template as a function of the key's text: every part but
 * `{pk}` is the capture's own, so the template is parsed once per capture, not per row.
 */
const keyTemplates = new WeakMap<ResolvedCapture, (pk: string) => string>();
function keyTemplateOf(capture: ResolvedCapture): (pk: string) => string {
  let build = keyTemplates.get(capture);
  if (!build) {
    const template = capture.orderingKey as string;
    const parts: Record<string, string> = {
      label: capture.label,
      app: capture.app ?? '',
      model: capture.model.name.toLowerCase(),
      table: capture.table,
    };
    // Alternating constant text and `{pk}` places: [text, text, …] split at each {pk}.
    const texts = template.split(/(\{[^}]*\})/).reduce<string[]>(
      (out, piece) => {
        const name = /^\{([^}]*)\}$/.exec(piece)?.[1];
        if (name === 'pk') out.push('');
        else out[out.length - 1] += name === undefined ? piece : (parts[name] ?? '');
        return out;
      },
      [''],
    );
    build =
      texts.length === 1
        ? () => texts[0]!
        : texts.length === 2
          ? (pk) => texts[0]! + pk + texts[1]!
          : (pk) => texts.join(pk);
    keyTemplates.set(capture, build);
  }
  return build;
}

/** Build one change: the images as the payload mode wants them. */
export function changeOf(
  capture: ResolvedCapture,
  operation: CaptureOperation,
  rows: {
    before?: Record<string, unknown> | null;
    after?: Record<string, unknown> | null;
    changed?: readonly string[] | null;
  },
  occurredAt: Date,
): CapturedChange {
  const source = (operation === 'deleted' ? rows.before : rows.after) ?? rows.before ?? rows.after;
  const pk = pkOf(capture, source ?? {});
  const before = operation === 'inserted' ? null : rowImage(capture, rows.before);
  const after = operation === 'deleted' ? null : rowImage(capture, rows.after);
  const change: CapturedChange = {
    model: capture.label,
    operation,
    pk,
    changed: operation === 'updated' ? (rows.changed ?? null) : null,
    before,
    after,
    occurredAt,
  };
  if (capture.tenant === undefined) return change;
  const tenant = source?.[capture.tenant];
  return { ...change, tenant: tenant === null || tenant === undefined ? null : String(tenant) };
}

/** The event payload of a change under the capture's payload mode. */
export function envelopeOf(
  capture: ResolvedCapture,
  change: CapturedChange,
): Record<string, unknown> {
  const envelope: Record<string, unknown> = {
    model: change.model,
    operation: change.operation,
    pk: change.pk,
    changed: change.changed,
  };
  if (capture.payload === 'after') {
    if (change.operation === 'deleted') envelope.before = change.before;
    else envelope.after = change.after;
  } else if (capture.payload === 'beforeAndAfter') {
    envelope.before = change.before;
    envelope.after = change.after;
  }
  envelope.occurred_at = change.occurredAt.toISOString();
  if (capture.tenant !== undefined) envelope.tenant = change.tenant ?? null;
  return envelope;
}

const FLOAT_TEXTS: ReadonlySet<string> = new Set(['NaN', 'Infinity', '-Infinity']);

/** A value JSON writes as itself and reads back the same: null, a string, a boolean, a finite number. */
function primitive(v: unknown): boolean {
  return (
    v === null ||
    typeof v === 'string' ||
    typeof v === 'boolean' ||
    (typeof v === 'number' && Number.isFinite(v))
  );
}

/** Whether a value is of its kind's JSON form (null always is: every attribute's schema is nullable). */
function fits(kind: AttributeKind, v: unknown): boolean {
  switch (kind) {
    case 'number':
      return v === null || (typeof v === 'number' && Number.isFinite(v));
    case 'float':
      return (
        v === null ||
        (typeof v === 'number' && Number.isFinite(v)) ||
        (typeof v === 'string' && FLOAT_TEXTS.has(v))
      );
    case 'boolean':
      return v === null || typeof v === 'boolean';
    case 'string':
      return v === null || typeof v === 'string';
    default:
      // z.unknown() takes anything; only a primitive is sure to encode as itself.
      return primitive(v);
  }
}

const OPERATIONS: ReadonlySet<string> = new Set(['inserted', 'updated', 'deleted']);
const kindCache = new WeakMap<ResolvedCapture, readonly AttributeKind[]>();

/**
 * The envelope's JSON text when it is sure to be what `fire()` would make of it — its
 * topic's schema (`envelopeSchema`) accepts it and the codec would write it unchanged:
 * every value a primitive of its attribute's JSON kind, no extension's keys — else
 * undefined, and `fire()` parses and encodes it as any payload (and names what it
 * refuses). A text with a `\u` escape (a control character, a NUL, a lone surrogate)
 * is left to the codec too, which refuses what PostgreSQL cannot store.
 *
 * Only for the capture's own topics (`capture.topics`), whose schema is the envelope's.
 */
export function envelopeText(
  capture: ResolvedCapture,
  envelope: Record<string, unknown>,
): string | undefined {
  let kinds = kindCache.get(capture);
  if (!kinds) {
    kinds = columnsOf(capture).fields.map((c) => attributeKind(c.typeKey));
    kindCache.set(capture, kinds);
  }
  if (typeof envelope.model !== 'string' || typeof envelope.occurred_at !== 'string') {
    return undefined;
  }
  if (!OPERATIONS.has(envelope.operation as string)) return undefined;
  const tenant = envelope.tenant;
  if (tenant !== undefined && tenant !== null && typeof tenant !== 'string') return undefined;
  const changed = envelope.changed;
  if (changed !== null) {
    if (!Array.isArray(changed)) return undefined;
    for (const c of changed) if (typeof c !== 'string') return undefined;
  }
  const pk = envelope.pk;
  if (!primitive(pk)) {
    if (typeof pk !== 'object' || Object.getPrototypeOf(pk) !== Object.prototype) return undefined;
    for (const v of Object.values(pk as object)) if (!primitive(v)) return undefined;
  }
  const fields = columnsOf(capture).fields;
  for (const image of [envelope.before, envelope.after]) {
    if (image === undefined || image === null) continue;
    const row = image as Record<string, unknown>;
    for (let i = 0; i < fields.length; i++) {
      if (!fits(kinds[i]!, row[fields[i]!.name])) return undefined;
    }
  }
  const text = JSON.stringify(envelope);
  return text.includes('\\u') ? undefined : text;
}
