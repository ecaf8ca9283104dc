import { z } from 'zod';

/** Which side of a zod schema to describe: what a caller passes, or what parsing returns. */
export type Side = 'input' | 'output';

/** One property of an object payload, as the generated interface declares it. */
export interface PayloadProperty {
  readonly name: string;
  readonly type: string;
  readonly optional: boolean;
  readonly description: string | undefined;
}

/** A payload type, readable: an object's properties, or one type expression. */
export type PayloadTypeText =
  | {
      readonly kind: 'object';
      readonly properties: readonly PayloadProperty[];
      readonly index: string | undefined;
    }
  | { readonly kind: 'type'; readonly text: string };

interface Internals {
  readonly def: { readonly type: string } & Record<string, unknown>;
  readonly optin?: 'optional' | 'defaulted';
  readonly optout?: 'optional';
}

const internals = (schema: z.ZodType): Internals => (schema as unknown as { _zod: Internals })._zod;

/** Thrown inside the walk for a schema part a TypeScript type cannot be written for. */
class Unsupported extends Error {}

/**
 * Write a zod schema's type as readable TypeScript — `{ orderId: string; items: { sku:
 * string }[] }` rather than `z.infer<typeof schema>` — for the generated payload types.
 *
 * Returns undefined for a schema with a part whose type only the compiler knows (a
 * transform's output, `z.lazy`, `z.custom`): the generator then falls back to
 * `PayloadOutput<...>` of the config, correct if less readable. The generated emitters
 * call the config-typed `outbox.fire`, so a type written here that disagreed with zod's
 * would fail to compile rather than lie.
 */
export function payloadTypeText(schema: z.ZodType, side: Side): PayloadTypeText | undefined {
  try {
    const def = internals(schema).def;
    if (def.type === 'object') {
      const { properties, index } = objectParts(schema, side);
      return { kind: 'object', properties, index };
    }
    return { kind: 'type', text: typeText(schema, side) };
  } catch (error) {
    if (error instanceof Unsupported) return undefined;
    throw error;
  }
}

function objectParts(schema: z.ZodType, side: Side) {
  const def = internals(schema).def as unknown as {
    shape: Record<string, z.ZodType>;
    catchall?: z.ZodType;
  };
  const properties: PayloadProperty[] = Object.keys(def.shape).map((name) => {
    const child = def.shape[name];
    const zi = internals(child);
    const optional = side === 'input' ? zi.optin !== undefined : zi.optout !== undefined;
    return {
      name,
      type: typeText(optional ? unwrapOptional(child, side) : child, side),
      optional,
      description: z.globalRegistry.get(child)?.description,
    };
  });
  const catchall = def.catchall;
  const catchType = catchall ? internals(catchall).def.type : 'never';
  const index = catchType === 'never' ? undefined : typeText(catchall as z.ZodType, side);
  return { properties, index };
}

/**
 * `z.string().optional()` as a property (and, on the input side, `.default(x)`): its `?:`
 * already says the value may be left out, so the type is the inner one.
 */
function unwrapOptional(schema: z.ZodType, side: Side): z.ZodType {
  const def = internals(schema).def;
  if (def.type === 'optional') return def.innerType as z.ZodType;
  if (side === 'input' && (def.type === 'default' || def.type === 'prefault')) {
    return def.innerType as z.ZodType;
  }
  return schema;
}

function typeText(schema: z.ZodType, side: Side): string {
  const def = internals(schema).def;
  const inner = () => typeText(def.innerType as z.ZodType, side);
  switch (def.type) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'null':
    case 'undefined':
    case 'void':
    case 'never':
    case 'unknown':
    case 'symbol':
      return def.type;
    case 'nan':
      return 'number';
    case 'any':
      return 'unknown';
    case 'bigint':
      return side === 'input' && def.coerce ? 'bigint | number | string' : 'bigint';
    case 'date':
      // Stored as ISO text: a coercing schema decodes both, and the emitter takes both.
      return side === 'input' && def.coerce ? 'Date | string' : 'Date';
    case 'literal':
      return union((def.values as unknown[]).map(literal));
    case 'enum':
      return union(Object.values(def.entries as Record<string, unknown>).map(literal));
    case 'object': {
      const { properties, index } = objectParts(schema, side);
      const parts = properties.map(
        (p) => `${propertyName(p.name)}${p.optional ? '?' : ''}: ${p.type}`,
      );
      if (index !== undefined) parts.push(`[key: string]: ${index}`);
      return parts.length ? `{ ${parts.join('; ')} }` : 'Record<string, never>';
    }
    case 'array':
      return `${group(typeText(def.element as z.ZodType, side))}[]`;
    case 'tuple': {
      const items = (def.items as z.ZodType[]).map((item) => typeText(item, side));
      if (def.rest) items.push(`...${group(typeText(def.rest as z.ZodType, side))}[]`);
      return `[${items.join(', ')}]`;
    }
    case 'union':
      return union((def.options as z.ZodType[]).map((o) => typeText(o, side)));
    case 'intersection':
      return `${group(typeText(def.left as z.ZodType, side))} & ${group(typeText(def.right as z.ZodType, side))}`;
    case 'record':
      return `Record<${typeText(def.keyType as z.ZodType, side)}, ${typeText(def.valueType as z.ZodType, side)}>`;
    case 'nullable':
      return union([inner(), 'null']);
    case 'optional':
      return union([inner(), 'undefined']);
    case 'default':
    case 'prefault':
      return side === 'input' ? union([inner(), 'undefined']) : inner();
    case 'catch':
    case 'nonoptional':
      if (internals(def.innerType as z.ZodType).def.type === 'optional') throw new Unsupported();
      return inner();
    case 'readonly': {
      const text = inner();
      return text.endsWith('[]') ? `readonly ${text}` : `Readonly<${text}>`;
    }
    case 'pipe': {
      const part = (side === 'input' ? def.in : def.out) as z.ZodType;
      if (internals(part).def.type === 'transform') throw new Unsupported();
      return typeText(part, side);
    }
    default:
      // transform, lazy, custom, template_literal, promise, map, set, file, function…
      throw new Unsupported();
  }
}

function literal(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`;
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') return quote(value);
  return JSON.stringify(value);
}

/** A single-quoted TypeScript string literal. */
export function quote(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
}

/** A property name as written in a type: bare when it is an identifier, else quoted. */
export function propertyName(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? name : quote(name);
}

function union(parts: string[]): string {
  return [...new Set(parts)].join(' | ');
}

/** Parenthesise a union or intersection where it is an operand (`(a | b)[]`). */
function group(text: string): string {
  return hasTopLevelOperator(text) ? `(${text})` : text;
}

/** Whether `|` or `&` appears outside brackets and string literals. */
function hasTopLevelOperator(text: string): boolean {
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === "'") quoted = false;
    } else if (c === "'") quoted = true;
    else if ('{[(<'.includes(c)) depth++;
    else if ('}])>'.includes(c)) depth--;
    else if (depth === 0 && (c === '|' || c === '&')) return true;
  }
  return false;
}
