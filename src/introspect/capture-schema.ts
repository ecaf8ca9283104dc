/**
 * The catalogue's payload schema of a captured topic, derived from the model's attributes.
 *
 * Why not the zod schema the capture declares its events with: that one is what the
 * runtime decodes with, deliberately loose (any attribute may be null, an unknown type is
 * `unknown`), so a row is never refused for a type capture did not foresee. The catalogue
 * is what a consumer reads and what CI diffs, so it says more: each attribute's JSON form
 * as `src/capture/envelope.ts` writes it (DECIMAL and BIGINT as text, dates as ISO text,
 * buffers base64, JSON as is), nullable only where the model allows null, ENUM values
 * listed, and which of `before`/`after` the payload mode and the operation carry.
 *
 * The attributes of `before`/`after` are listed as not required: an event recorded before
 * an attribute was added lacks it, so adding an attribute is a compatible change (the
 * diff's rule for an optional field) while removing one, or changing its type, is a
 * breaking one.
 */
import type { CaptureOperation, ResolvedCapture } from '../declare/capture.js';

/** A JSON Schema node. */
type JsonSchema = Record<string, unknown>;

const DRAFT = 'https://json-schema.org/draft/2020-12/schema';

/** What capture reads of one Sequelize attribute definition. */
interface AttributeDefinition {
  readonly type?: unknown;
  readonly allowNull?: boolean;
  readonly primaryKey?: boolean;
  readonly values?: readonly string[];
}

/** What capture reads of a Sequelize DataType instance. */
interface DataTypeLike {
  readonly key?: string;
  readonly values?: readonly string[];
  readonly type?: unknown;
  readonly _subtype?: string;
  readonly options?: { readonly subtype?: unknown; readonly type?: unknown };
}

/**
 * The JSON Schema of one attribute's value in the envelope, from its Sequelize DataType
 * (never null: {@link attributeSchema} adds that where the model allows it).
 */
export function dataTypeSchema(type: unknown, values?: readonly string[]): JsonSchema {
  const dt = (type ?? {}) as DataTypeLike;
  switch (dt.key) {
    case 'INTEGER':
    case 'SMALLINT':
    case 'MEDIUMINT':
    case 'TINYINT':
      return { type: 'integer' };
    case 'BIGINT':
      // Text: a JavaScript number loses digits past 2^53 (the envelope writes String(value)).
      return { type: 'string', pattern: '^-?\\d+$' };
    case 'DECIMAL':
      // Text as the database has it (SQLite's numbers formatted to the declared scale).
      return { type: 'string' };
    case 'FLOAT':
    case 'DOUBLE':
    case 'REAL':
      // NaN and the infinities are written as their text: JSON has no number for them.
      return { anyOf: [{ type: 'number' }, { enum: ['NaN', 'Infinity', '-Infinity'] }] };
    case 'BOOLEAN':
      return { type: 'boolean' };
    case 'DATE':
      return { type: 'string', format: 'date-time' };
    case 'DATEONLY':
      return { type: 'string', format: 'date' };
    case 'BLOB':
      return { type: 'string', contentEncoding: 'base64' };
    case 'UUID':
      return { type: 'string', format: 'uuid' };
    case 'STRING':
    case 'TEXT':
    case 'CHAR':
    case 'CITEXT':
    case 'TIME':
    case 'INET':
    case 'CIDR':
    case 'MACADDR':
    case 'TSVECTOR':
      return { type: 'string' };
    case 'ENUM': {
      const list = dt.values ?? values;
      return list?.length ? { enum: [...list] } : { type: 'string' };
    }
    case 'ARRAY':
      return { type: 'array', items: dataTypeSchema(dt.type) };
    case 'RANGE': {
      // As the envelope keeps it, which is as Sequelize has it: read from PostgreSQL, []
      // when empty, else two bounds `{ value, inclusive }` (an unbounded side's value null);
      // an instance's own values as the caller gave them (bare bounds, or those objects).
      const subtype =
        typeof dt.options?.subtype === 'string' ? { key: dt.options.subtype } : dt.options?.subtype;
      const value = { anyOf: [dataTypeSchema(subtype ?? { key: dt._subtype }), { type: 'null' }] };
      const bound = {
        type: 'object',
        properties: { inclusive: { type: 'boolean' }, value },
        required: ['inclusive', 'value'],
      };
      return { type: 'array', items: { anyOf: [bound, value] }, maxItems: 2 };
    }
    case 'HSTORE':
      return { type: 'object', additionalProperties: { type: 'string' } };
    default:
      // JSON, JSONB, GEOMETRY, VIRTUAL and types capture does not know: any JSON value.
      return {};
  }
}

/** One attribute's schema: its DataType's, or null where the model allows null. */
export function attributeSchema(attribute: AttributeDefinition | undefined): JsonSchema {
  const base = dataTypeSchema(attribute?.type, attribute?.values);
  const nullable = attribute?.allowNull !== false && attribute?.primaryKey !== true;
  if (!nullable || Object.keys(base).length === 0) return base;
  return { anyOf: [base, { type: 'null' }] };
}

function attributesOf(capture: ResolvedCapture): Record<string, AttributeDefinition> {
  return (capture.model.getAttributes?.() ?? {}) as Record<string, AttributeDefinition>;
}

/** The captured attributes of a row: one property each, none required (see the module). */
function rowSchema(capture: ResolvedCapture): JsonSchema {
  const attributes = attributesOf(capture);
  const properties: Record<string, JsonSchema> = {};
  for (const field of [...capture.fields].sort()) {
    const key = (attributes[field]?.type as DataTypeLike | undefined)?.key ?? 'unknown type';
    properties[field] = {
      ...attributeSchema(attributes[field]),
      description: `${capture.model.name}.${field} (${key})`,
    };
  }
  return { type: 'object', properties, additionalProperties: false };
}

/** The key: the attribute's value, or an object of the key's attributes for a composite key. */
function pkSchema(capture: ResolvedCapture): JsonSchema {
  const attributes = attributesOf(capture);
  const keyOf = (name: string) => dataTypeSchema(attributes[name]?.type, attributes[name]?.values);
  if (capture.primaryKey.length === 1) return keyOf(capture.primaryKey[0]!);
  const properties: Record<string, JsonSchema> = {};
  for (const name of [...capture.primaryKey].sort()) properties[name] = keyOf(name);
  return {
    type: 'object',
    properties,
    required: [...capture.primaryKey].sort(),
    additionalProperties: false,
  };
}

/** Which images an event of this operation carries under the capture's payload mode. */
export function imagesOf(
  capture: ResolvedCapture,
  operation: CaptureOperation,
): { before?: 'row' | 'null'; after?: 'row' | 'null' } {
  switch (capture.payload) {
    case 'keys':
      return {};
    case 'after':
      return operation === 'deleted' ? { before: 'row' } : { after: 'row' };
    case 'beforeAndAfter':
      return {
        before: operation === 'inserted' ? 'null' : 'row',
        after: operation === 'deleted' ? 'null' : 'row',
      };
  }
}

/**
 * The JSON Schema of a captured topic's payload: the envelope (`model`, `operation`, `pk`,
 * `changed`, `before`/`after` as the payload mode has them, `occurred_at`), other keys
 * allowed (an `extend` adds its own).
 */
export function captureJsonSchema(
  capture: ResolvedCapture,
  operation: CaptureOperation,
): JsonSchema {
  const properties: Record<string, JsonSchema> = {
    changed:
      operation === 'updated'
        ? { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] }
        : { type: 'null' },
    model: { const: capture.label },
    occurred_at: { type: 'string', format: 'date-time' },
    operation: { const: operation },
    pk: pkSchema(capture),
  };
  if (capture.tenant !== undefined)
    properties.tenant = { anyOf: [{ type: 'string' }, { type: 'null' }] };
  const images = imagesOf(capture, operation);
  for (const side of ['after', 'before'] as const) {
    const image = images[side];
    if (image) properties[side] = image === 'row' ? rowSchema(capture) : { type: 'null' };
  }
  const sorted = Object.fromEntries(
    Object.keys(properties)
      .sort()
      .map((k) => [k, properties[k]]),
  );
  return {
    $schema: DRAFT,
    type: 'object',
    properties: sorted,
    required: Object.keys(sorted),
    additionalProperties: {},
  };
}

/**
 * The capture behind each captured topic of a config, by topic: which model, which
 * operation. Topics named by a function are declared in `events` by the app, with its own
 * schema, and are not listed.
 */
export function capturedTopics(
  captures: readonly ResolvedCapture[],
): Map<string, { capture: ResolvedCapture; operation: CaptureOperation }> {
  const out = new Map<string, { capture: ResolvedCapture; operation: CaptureOperation }>();
  for (const capture of captures) {
    for (const [operation, topic] of Object.entries(capture.topics)) {
      if (topic) out.set(topic, { capture, operation: operation as CaptureOperation });
    }
  }
  return out;
}
