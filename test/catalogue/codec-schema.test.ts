/**
 * The catalogue's `schema` and `fields` of an event describe its message body as its codec
 * writes it (what the row stores and `getBody` sends), checked against real encoded bodies
 * with a JSON Schema validator (ajv, draft 2020-12).
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildAsyncApi } from '../../catalogue/asyncapi.js';
import { superjsonCodec } from '../../src/codec/payload-codec.js';
import {
  buildCatalogue,
  ConfigurationError,
  defineOutbox,
  encodeJsonValue,
  event,
  type PayloadCodec,
} from '../../src/index.js';

type Validate = ((data: unknown) => boolean) & { errors?: unknown };
interface AjvLike {
  compile(schema: object): Validate;
}
const require = createRequire(import.meta.url);
/** ajv's draft 2020-12 build with its formats (`date-time`): a real validator, not our reading. */
function validator(schema: object): Validate {
  const Ajv2020 = require('ajv/dist/2020') as { default: new (o: object) => AjvLike };
  const addFormats = require('ajv-formats') as { default: (ajv: AjvLike) => void };
  const ajv = new Ajv2020.default({ strict: false, allErrors: true });
  addFormats.default(ajv);
  return ajv.compile(schema);
}

const Rich = z.object({
  at: z.date(),
  amount: z.bigint(),
  tags: z.set(z.string()),
  stock: z.map(z.string(), z.object({ count: z.number().int(), since: z.date() })),
  note: z.string().optional(),
  lines: z.array(z.object({ sku: z.string(), due: z.date().nullable() })),
});
const richPayload = () => ({
  at: new Date('2031-03-01T12:00:00.000Z'),
  amount: 12345678901234567890n,
  tags: new Set(['a', 'b']),
  stock: new Map([['tea', { count: 3, since: new Date('2030-01-01T00:00:00.000Z') }]]),
  lines: [
    { sku: 'x', due: new Date('2031-04-01T00:00:00.000Z') },
    { sku: 'y', due: null },
  ],
});

/** The body `getBody` sends for a superjson event: its stored document, parsed. */
const superjsonBody = (payload: unknown) =>
  JSON.parse(superjsonCodec.encode(Rich.parse(payload), 'payload').text);

const richEvent = (codec: string) =>
  buildCatalogue(
    defineOutbox({
      events: { 'shop.Rich': event({ schema: Rich, codec }) },
      codecs:
        codec === 'dates' ? [datesCodec(true)] : codec === 'opaque' ? [datesCodec(false)] : [],
    }),
  ).events[0];

describe('the catalogue of a superjson event describes superjson’s { json, meta } body', () => {
  it('real superjson bodies validate against the published schema; the payload’s bare JSON does not', () => {
    const schema = richEvent('superjson').schema;
    const validate = validator(schema);
    const body = superjsonBody(richPayload());
    expect(body.meta).toBeDefined();
    expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
    // A body with nothing needing meta (no Date, bigint, Map or Set values left) still holds.
    const bare = superjsonBody({ ...richPayload(), tags: new Set(), stock: new Map(), lines: [] });
    expect(validate(bare), JSON.stringify(validate.errors)).toBe(true);
    // What the schema described before: the payload's values as JSON, not the body.
    expect(validate(body.json)).toBe(false);
    // A Map's member of the wrong shape is refused: the schema is not merely { json: {} }.
    expect(validate({ ...body, json: { ...body.json, stock: [['tea', { count: 'x' }]] } })).toBe(
      false,
    );
  });

  it('its fields name the body’s paths, a Map as [key, value] pairs and a Set as an array', () => {
    const fields = Object.fromEntries(richEvent('superjson').fields.map((f) => [f.name, f.type]));
    expect(fields).toMatchObject({
      json: 'object',
      'json.at': 'string (date-time)',
      'json.amount': 'string',
      'json.tags': 'array<string>',
      'json.stock': 'array<[string, object]>',
      'json.lines[].due': 'string (date-time) | null',
      meta: 'object',
    });
    expect(richEvent('superjson').fields.find((f) => f.name === 'json')?.required).toBe(true);
    expect(richEvent('superjson').fields.find((f) => f.name === 'meta')?.required).toBe(false);
  });

  it('a recursive schema’s references to its root point at the body’s json', () => {
    interface Node {
      at: Date;
      children?: Node[];
    }
    const Tree: z.ZodType<Node> = z.object({
      at: z.date(),
      get children() {
        return z.array(Tree).optional();
      },
    });
    const schema = buildCatalogue(
      defineOutbox({ events: { 'a.Tree': event({ schema: Tree, codec: 'superjson' }) } }),
    ).events[0].schema;
    const value = { at: new Date(0), children: [{ at: new Date(1), children: [] }] };
    const body = JSON.parse(superjsonCodec.encode(value, 'payload').text);
    const validate = validator(schema);
    expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ json: { at: 'x', children: [{ at: 5 }] } })).toBe(false);
  });

  it('the AsyncAPI message payload is the body, and the message names its codec header', () => {
    const catalogue = buildCatalogue(
      defineOutbox({ events: { 'shop.Rich': event({ schema: Rich, codec: 'superjson' }) } }),
    );
    const doc = buildAsyncApi(catalogue, { title: 'shop', version: '1.0.0' }) as {
      components: { messages: Record<string, Record<string, Record<string, unknown>>> };
    };
    const message = Object.values(doc.components.messages)[0];
    expect(Object.keys(message.payload.properties as object)).toEqual(['json', 'meta']);
    expect(message.payload.required).toEqual(['json']);
    expect(message.headers.properties).toMatchObject({
      'outbox-codec': { type: 'string', const: 'superjson' },
    });
    expect(message.description).toContain("superjson's document { json, meta }");
  });
});

/**
 * A codec of the app's storing a Date as `{ "$date": <epoch ms> }`, with (`describes`) or
 * without a `bodySchema` of what it writes.
 */
function datesCodec(describes: boolean): PayloadCodec {
  const toTagged = (value: unknown): unknown => {
    if (value instanceof Date) return { $date: value.getTime() };
    if (typeof value === 'bigint') return value.toString();
    if (value instanceof Set) return [...value].map(toTagged);
    if (value instanceof Map) return [...value].map(([k, v]) => [toTagged(k), toTagged(v)]);
    if (Array.isArray(value)) return value.map(toTagged);
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toTagged(v)]));
    }
    return value;
  };
  const codec: PayloadCodec = {
    name: describes ? 'dates' : 'opaque',
    encode: (payload, root) => ({
      text: encodeJsonValue(toTagged(payload), root).text,
      reshaped: true,
    }),
    decode: (stored) => stored,
  };
  if (!describes) return codec;
  return {
    ...codec,
    bodySchema: (schema) =>
      z.toJSONSchema(schema, {
        io: 'input',
        unrepresentable: 'any',
        override: (ctx) => {
          const type = (ctx.zodSchema as unknown as { _zod: { def: { type: string } } })._zod.def
            .type;
          if (type === 'date') {
            Object.assign(ctx.jsonSchema, {
              type: 'object',
              properties: { $date: { type: 'integer' } },
              required: ['$date'],
            });
          }
          if (type === 'bigint') Object.assign(ctx.jsonSchema, { type: 'string' });
        },
      }),
  };
}

describe('the catalogue of an event of a codec of the app’s', () => {
  it('is what the codec’s bodySchema says, validating the bodies it really writes', () => {
    const rich = richEvent('dates');
    expect(rich.codec).toBe('dates');
    const body = JSON.parse(datesCodec(true).encode(richPayload(), 'payload').text);
    expect(body.at).toEqual({ $date: Date.parse('2031-03-01T12:00:00.000Z') });
    const validate = validator(rich.schema);
    expect(validate(body), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...body, at: '2031-03-01T12:00:00.000Z' })).toBe(false);
    expect(rich.fields.find((f) => f.name === 'at.$date')?.type).toBe('integer');
  });

  it('without bodySchema it is published as an opaque body: no fields, a schema saying so', () => {
    const rich = richEvent('opaque');
    expect(rich.codec).toBe('opaque');
    expect(rich.fields).toEqual([]);
    expect(rich.schema).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      description:
        'The document the payload codec "opaque" writes, which publishes no schema of it (PayloadCodec.bodySchema): opaque to the catalogue',
    });
  });

  it('a bodySchema that throws is a ConfigurationError naming the codec and the event', () => {
    const broken: PayloadCodec = {
      ...datesCodec(false),
      name: 'broken',
      bodySchema: () => {
        throw new Error('no idea');
      },
    };
    const config = defineOutbox({
      codecs: [broken],
      events: { 'a.A': event({ schema: z.object({}), codec: 'broken' }) },
    });
    expect(() => buildCatalogue(config)).toThrow(ConfigurationError);
    expect(() => buildCatalogue(config)).toThrow(
      'the payload codec "broken" cannot describe the body of events["a.A"] for the catalogue: its bodySchema threw (no idea)',
    );
  });
});
