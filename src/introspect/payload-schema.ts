import { z } from 'zod';
import { ConfigurationError } from '../errors/outbox-error.js';
import type { CatalogueField } from './catalogue-types.js';

/** A JSON Schema node, as `z.toJSONSchema` writes it. */
type JsonSchema = Readonly<Record<string, unknown>>;

/** The JSON Schema dialect the catalogue writes (zod 4's). */
const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/**
 * How a codec's document holds the payload's values: `json` (the JSON codec's table) or
 * `superjson` (superjson's `json` part: also a Map as `[key, value]` pairs, a Set as an
 * array of its values, `NaN` as the text `"NaN"`, undefined as null).
 */
type ValueForm = 'json' | 'superjson';

/**
 * The JSON Schema of an event's payload, as stored: the *input* side of the zod schema
 * (a field with a default is not required, since an old row without it still decodes),
 * with dates as ISO text and bigints as decimal text, which is how the codec writes them.
 *
 * Object properties and `required` lists are sorted, so reordering the fields of a
 * `z.object` is not a change to the catalogue.
 *
 * @throws {ConfigurationError} naming the event when zod cannot describe the schema.
 */
export function payloadJsonSchema(eventName: string, schema: z.ZodType): JsonSchema {
  return canonical(describeValues(eventName, schema, 'json')) as JsonSchema;
}

/**
 * The JSON Schema of a superjson event's message body — superjson's document
 * `{ json, meta }`, what the row stores and `getBody(event)` sends — rather than of the
 * payload's values: `json` holds the payload as superjson's JSON holds it (a `Date` as ISO
 * text, a `bigint` as decimal text, a `Map` as an array of `[key, value]` pairs, a `Set` as
 * an array), `meta` superjson's type annotations (left out when no value needs one). A
 * consumer in another language reads `body.json`; one in TypeScript hands the whole body to
 * `SuperJSON.deserialize`.
 *
 * @throws {ConfigurationError} naming the event when zod cannot describe the schema.
 */
export function superjsonBodyJsonSchema(eventName: string, schema: z.ZodType): JsonSchema {
  const { $schema: _, $defs, ...payload } = describeValues(eventName, schema, 'superjson');
  return canonical({
    $schema: DRAFT_2020_12,
    type: 'object',
    description:
      "superjson's document: json holds the payload as JSON (a Date as ISO text, a bigint as decimal text, a Map as [key, value] pairs, a Set as an array), meta the types superjson restores from it",
    properties: {
      // The payload's own references to its root (`#`, a recursive schema) now point here.
      json: rebaseRoot(payload, '#/properties/json'),
      meta: {
        type: 'object',
        description:
          "superjson's type annotations of json's values (which are a Date, a bigint, a Map …); absent when none needs one. Pass the whole body to SuperJSON.deserialize to get the values back",
      },
    },
    required: ['json'],
    additionalProperties: false,
    ...($defs === undefined ? {} : { $defs }),
  }) as JsonSchema;
}

/**
 * The body of an event whose codec (one of the app's) publishes no schema of what it
 * writes: any JSON, said so, rather than a guess from the payload's schema.
 */
export function opaqueBodyJsonSchema(codecName: string): JsonSchema {
  return {
    $schema: DRAFT_2020_12,
    description: `The document the payload codec "${codecName}" writes, which publishes no schema of it (PayloadCodec.bodySchema): opaque to the catalogue`,
  };
}

/** Point a schema's references to its own root (`#`) at where it is now placed. */
function rebaseRoot(node: unknown, base: string): unknown {
  if (Array.isArray(node)) return node.map((child) => rebaseRoot(child, base));
  if (typeof node !== 'object' || node === null) return node;
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      key === '$ref' && value === '#' ? base : rebaseRoot(value, base),
    ]),
  );
}

/** The payload's JSON Schema with its values in `form` (unsorted; see the callers). */
function describeValues(eventName: string, schema: z.ZodType, form: ValueForm): JsonSchema {
  try {
    return valueSchema(schema, form);
  } catch (error) {
    throw new ConfigurationError(
      `events["${eventName}"].schema cannot be described as JSON Schema for the catalogue: ${(error as Error).message}`,
      { path: `events["${eventName}"].schema`, cause: error },
    );
  }
}

function valueSchema(schema: z.ZodType, form: ValueForm): JsonSchema {
  return z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    override: (ctx) => {
      ownMetadata(ctx.zodSchema, ctx.jsonSchema);
      const def = (ctx.zodSchema as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
      const type = def.type as string;
      if (type === 'date') Object.assign(ctx.jsonSchema, { type: 'string', format: 'date-time' });
      if (type === 'bigint') Object.assign(ctx.jsonSchema, { type: 'string', pattern: '^-?\\d+$' });
      if (form !== 'superjson') return;
      // What superjson's json part holds where JSON has no such value; zod describes none
      // of these (nor descends into a Map's or Set's members), so their members are
      // described here, each on its own.
      if (type === 'map') {
        Object.assign(ctx.jsonSchema, {
          type: 'array',
          items: {
            type: 'array',
            prefixItems: [
              member(def.keyType as z.ZodType, form),
              member(def.valueType as z.ZodType, form),
            ],
            items: false,
            minItems: 2,
          },
        });
      }
      if (type === 'set') {
        Object.assign(ctx.jsonSchema, {
          type: 'array',
          items: member(def.valueType as z.ZodType, form),
        });
      }
      if (type === 'nan') Object.assign(ctx.jsonSchema, { type: 'string', const: 'NaN' });
      if (type === 'undefined') Object.assign(ctx.jsonSchema, { type: 'null' });
    },
  }) as JsonSchema;
}

/** A Map's key or value, a Set's member: its own schema, inline. */
function member(schema: z.ZodType, form: ValueForm): JsonSchema {
  const { $schema: _, ...rest } = valueSchema(schema, form);
  return rest;
}

/**
 * Copy a schema's metadata (`.describe()`, `.meta()`) as its own copy of zod keeps it.
 * `z.toJSONSchema` reads metadata from the registry of the zod it is imported from; a
 * schema made by ANOTHER copy of zod (a CommonJS app's `require('zod')` beside this
 * package's `import`, which before zod 4.2 kept a registry each) has its metadata in that
 * copy's registry, which the schema's own `.meta()` reads. Keys the JSON Schema already has
 * are kept; `id` is a registry's, not a field's.
 */
function ownMetadata(schema: unknown, json: Record<string, unknown>): void {
  const meta = (schema as { meta?: () => unknown }).meta;
  if (typeof meta !== 'function') return;
  let own: unknown;
  try {
    own = meta.call(schema);
  } catch {
    return;
  }
  if (!isRecord(own)) return;
  for (const [key, value] of Object.entries(own))
    if (key !== 'id' && value !== undefined && !(key in json)) json[key] = value;
}

/** Sort what is an unordered set in JSON Schema (properties, required), recursively. */
export function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === 'properties' && isRecord(child)) {
      out[key] = Object.fromEntries(
        Object.keys(child)
          .sort(compareText)
          .map((name) => [name, canonical(child[name])]),
      );
    } else if (key === 'required' && Array.isArray(child)) {
      out[key] = [...child].sort(compareText);
    } else {
      out[key] = canonical(child);
    }
  }
  return out;
}

/**
 * The payload's fields, flattened depth first (`items`, then `items[].quantity`,
 * `items[].sku`), siblings sorted by name. A payload that is not an object has no fields.
 */
export function payloadFields(schema: JsonSchema): CatalogueField[] {
  const fields: CatalogueField[] = [];
  walkObject(schema, '', schema, fields);
  return fields;
}

function walkObject(node: JsonSchema, prefix: string, root: JsonSchema, out: CatalogueField[]) {
  const properties = node.properties;
  if (!isRecord(properties)) return;
  const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
  for (const key of Object.keys(properties).sort(compareText)) {
    const child = properties[key] as JsonSchema;
    const name = prefix ? `${prefix}.${key}` : key;
    out.push({
      name,
      type: spellType(child, root),
      required: required.has(key),
      description: typeof child.description === 'string' ? child.description : null,
    });
    descend(child, name, root, out);
  }
}

/** Continue into an object field, an array's elements or a record's values. */
function descend(node: JsonSchema, path: string, root: JsonSchema, out: CatalogueField[]) {
  if (isRecord(node.properties)) return walkObject(node, path, root, out);
  if (isRecord(node.items)) return descend(node.items, `${path}[]`, root, out);
  if (isRecord(node.additionalProperties) && !isRecord(node.properties)) {
    return descend(node.additionalProperties, `${path}{}`, root, out);
  }
  const options = (node.anyOf ?? node.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(options)) {
    // A nullable object (`object | null`) still has fields worth naming.
    const objects = options.filter((o) => o.type !== 'null');
    if (objects.length === 1) descend(objects[0], path, root, out);
  }
}

/**
 * Spell a JSON Schema node's type compactly: `string`, `string (email)`, `integer`,
 * `array<object>`, `record<string, number>`, `"a" | "b"`, `string | null`, `unknown`.
 */
export function spellType(node: JsonSchema, root: JsonSchema = node): string {
  if (typeof node.$ref === 'string') {
    const ref = node.$ref;
    return ref === '#' ? 'ref<#>' : `ref<${ref.replace(/^#\/\$defs\//, '')}>`;
  }
  if ('const' in node) return JSON.stringify(node.const);
  if (Array.isArray(node.enum)) return node.enum.map((v) => JSON.stringify(v)).join(' | ');
  const options = (node.anyOf ?? node.oneOf) as JsonSchema[] | undefined;
  if (Array.isArray(options)) return unique(options.map((o) => spellType(o, root))).join(' | ');
  if (Array.isArray(node.allOf)) {
    return unique((node.allOf as JsonSchema[]).map((o) => spellType(o, root))).join(' & ');
  }
  if (Array.isArray(node.type)) {
    return unique((node.type as string[]).map((t) => spellType({ ...node, type: t }, root))).join(
      ' | ',
    );
  }
  switch (node.type) {
    case 'string':
      return typeof node.format === 'string' ? `string (${node.format})` : 'string';
    case 'integer':
    case 'number':
    case 'boolean':
    case 'null':
      return node.type;
    case 'array':
      if (Array.isArray(node.prefixItems)) {
        return `[${(node.prefixItems as JsonSchema[]).map((o) => spellType(o, root)).join(', ')}]`;
      }
      return isRecord(node.items) ? `array<${spellType(node.items, root)}>` : 'array<unknown>';
    case 'object':
      if (!isRecord(node.properties) && isRecord(node.additionalProperties)) {
        return `record<string, ${spellType(node.additionalProperties, root)}>`;
      }
      return 'object';
    default:
      return 'unknown';
  }
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}

function isRecord(value: unknown): value is Record<string, JsonSchema> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Code-unit order: the same on every machine and locale, unlike `localeCompare`. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
