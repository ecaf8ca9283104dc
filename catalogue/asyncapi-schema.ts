/**
 * An event's payload schema as an AsyncAPI 3 document carries it.
 *
 * The catalogue writes JSON Schema draft 2020-12 (what zod 4 writes). An AsyncAPI message's
 * `payload` without a `schemaFormat` is an AsyncAPI Schema: a superset of JSON Schema
 * **draft-07**, the one format every AsyncAPI tool reads (a 2020-12 `schemaFormat` is not
 * among those the AsyncAPI parser knows). So the schema is restated in draft-07 terms rather
 * than wrapped: the few 2020-12 keywords zod writes have an exact draft-07 spelling, and the
 * rest of the schema is the same text.
 *
 * What changes, and why:
 *
 * - `$schema` goes: the document's schema format is implied, and a 2020-12 URI there would
 *   contradict it.
 * - `prefixItems` (a tuple) becomes draft-07's array form of `items`, and a 2020-12 `items`
 *   beside it (the rest of the tuple) becomes `additionalItems`.
 * - A `$ref` with siblings becomes `allOf: [{ $ref }]` beside them: draft-07 ignores a
 *   `$ref`'s siblings (a field's description or default would silently vanish).
 * - A local `$ref` (`#`, `#/$defs/Node`) is rewritten to point at the same place inside the
 *   AsyncAPI document: inside an AsyncAPI document `#` is the document's root, not the
 *   payload's, so a recursive payload would otherwise point at nothing.
 */

/** A JSON Schema node (or `true`/`false`). */
export type JsonSchemaNode = Readonly<Record<string, unknown>> | boolean;

/**
 * Restate a catalogue payload schema (draft 2020-12) as an AsyncAPI Schema (draft-07),
 * its local references re-pointed at `base`, the JSON pointer of where the schema is
 * placed in the AsyncAPI document (`#/components/messages/shop_OrderPlaced/payload`).
 */
export function toAsyncApiSchema(schema: JsonSchemaNode, base: string): JsonSchemaNode {
  const converted = convert(schema, base);
  if (typeof converted === 'object') {
    const { $schema: _dropped, ...rest } = converted;
    return rest;
  }
  return converted;
}

function convert(node: unknown, base: string): JsonSchemaNode {
  if (typeof node === 'boolean') return node;
  if (!isRecord(node)) return node as JsonSchemaNode;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'prefixItems' && Array.isArray(value)) {
      out.items = value.map((item) => convert(item, base));
    } else if (key === 'items' && Array.isArray(node.prefixItems)) {
      out.additionalItems = convert(value, base);
    } else if (key === '$ref' && typeof value === 'string') {
      out.$ref = rebase(value, base);
    } else if (SCHEMA_MAPS.has(key) && isRecord(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, child]) => [name, convert(child, base)]),
      );
    } else if (SCHEMA_LISTS.has(key) && Array.isArray(value)) {
      out[key] = value.map((child) => convert(child, base));
    } else if (SCHEMAS.has(key)) {
      out[key] = convert(value, base);
    } else {
      out[key] = value;
    }
  }
  if (typeof out.$ref === 'string' && Object.keys(out).length > 1) {
    const { $ref, ...siblings } = out;
    const allOf = Array.isArray(siblings.allOf) ? siblings.allOf : [];
    return { ...siblings, allOf: [{ $ref }, ...allOf] };
  }
  return out;
}

/** `#` and `#/…` are the payload's own; anything else (a URL) is left as written. */
function rebase(ref: string, base: string): string {
  if (ref === '#') return base;
  if (ref.startsWith('#/')) return `${base}${ref.slice(1)}`;
  return ref;
}

/** Keywords whose value is a map of names to schemas. */
const SCHEMA_MAPS = new Set([
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
]);
/** Keywords whose value is a list of schemas. */
const SCHEMA_LISTS = new Set(['allOf', 'anyOf', 'oneOf']);
/** Keywords whose value is one schema. */
const SCHEMAS = new Set([
  'items',
  'additionalItems',
  'additionalProperties',
  'propertyNames',
  'contains',
  'not',
  'if',
  'then',
  'else',
  'unevaluatedProperties',
  'unevaluatedItems',
]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
