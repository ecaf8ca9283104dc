import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { camel, eventNames, pascal } from '../../codegen/names.js';
import { importSpecifier } from '../../codegen/paths.js';
import { payloadTypeText } from '../../codegen/payload-type.js';
import { unifiedDiff } from '../../codegen/unified-diff.js';

const typeOf = (schema: z.ZodType, side: 'input' | 'output' = 'output') => {
  const text = payloadTypeText(schema, side);
  if (text?.kind !== 'type')
    throw new Error(`expected a type expression, got ${JSON.stringify(text)}`);
  return text.text;
};

describe('payload types are written readably from zod schemas', () => {
  it('an object payload becomes properties, optional ones with ?, in declaration order', () => {
    const schema = z.object({
      orderId: z.string().describe('the id'),
      coupon: z.string().optional(),
      channel: z.enum(['web', 'store']).default('web'),
      'line-items': z.array(z.object({ sku: z.string(), qty: z.number().int() })),
    });
    expect(payloadTypeText(schema, 'output')).toMatchInlineSnapshot(`
      {
        "index": undefined,
        "kind": "object",
        "properties": [
          {
            "description": "the id",
            "name": "orderId",
            "optional": false,
            "type": "string",
          },
          {
            "description": undefined,
            "name": "coupon",
            "optional": true,
            "type": "string",
          },
          {
            "description": undefined,
            "name": "channel",
            "optional": false,
            "type": "'web' | 'store'",
          },
          {
            "description": undefined,
            "name": "line-items",
            "optional": false,
            "type": "{ sku: string; qty: number }[]",
          },
        ],
      }
    `);
  });

  it('a defaulted field is optional on the input side only', () => {
    const schema = z.object({ channel: z.string().default('web') });
    const input = payloadTypeText(schema, 'input');
    const output = payloadTypeText(schema, 'output');
    expect(input?.kind === 'object' && input.properties[0].optional).toBe(true);
    expect(output?.kind === 'object' && output.properties[0].optional).toBe(false);
  });

  it('spells scalars, unions, nullables, records, tuples and literals', () => {
    expect(typeOf(z.string().nullable())).toMatchInlineSnapshot(`"string | null"`);
    expect(typeOf(z.array(z.union([z.string(), z.number()])))).toMatchInlineSnapshot(
      `"(string | number)[]"`,
    );
    expect(typeOf(z.array(z.object({ a: z.string() }).nullable()))).toMatchInlineSnapshot(
      `"({ a: string } | null)[]"`,
    );
    expect(typeOf(z.record(z.string(), z.number()))).toMatchInlineSnapshot(
      `"Record<string, number>"`,
    );
    expect(typeOf(z.tuple([z.string(), z.boolean()]))).toMatchInlineSnapshot(`"[string, boolean]"`);
    expect(typeOf(z.literal(["it's", 2]))).toMatchInlineSnapshot(`"'it\\'s' | 2"`);
    expect(typeOf(z.array(z.looseObject({ a: z.string() })))).toMatchInlineSnapshot(
      `"{ a: string; [key: string]: unknown }[]"`,
    );
  });

  it('a coerced date is a Date decoded and a Date or ISO text on the way in', () => {
    expect(typeOf(z.coerce.date(), 'output')).toBe('Date');
    expect(typeOf(z.coerce.date(), 'input')).toBe('Date | string');
  });

  it('a schema only the compiler can type (a transform) is left to the fallback', () => {
    expect(
      payloadTypeText(
        z.string().transform((s) => s.length),
        'output',
      ),
    ).toBeUndefined();
    expect(payloadTypeText(z.object({ n: z.lazy(() => z.string()) }), 'output')).toBeUndefined();
    // The input side of a pipe into a transform is still known.
    expect(
      typeOf(
        z.string().transform((s) => s.length),
        'input',
      ),
    ).toBe('string');
  });
});

describe('generated names', () => {
  it('use the last segment of the event name, and the whole name when two would collide', () => {
    expect(
      eventNames(['shop.OrderPlaced', 'billing.OrderPlaced', 'billing.invoice-paid', '2fa.on']),
    ).toMatchInlineSnapshot(`
      [
        {
          "emitter": "on",
          "event": "2fa.on",
          "type": "On",
        },
        {
          "emitter": "billingOrderPlaced",
          "event": "billing.OrderPlaced",
          "type": "BillingOrderPlaced",
        },
        {
          "emitter": "invoicePaid",
          "event": "billing.invoice-paid",
          "type": "InvoicePaid",
        },
        {
          "emitter": "shopOrderPlaced",
          "event": "shop.OrderPlaced",
          "type": "ShopOrderPlaced",
        },
      ]
    `);
  });

  it('camel-cases a leading acronym as a word', () => {
    expect(camel('URLChanged')).toBe('urlChanged');
    expect(camel('OrderPlaced')).toBe('orderPlaced');
    expect(pascal('order_placed')).toBe('OrderPlaced');
    expect(pascal('2fa.enabled')).toBe('E2faEnabled');
  });

  it('imports a .ts file by its .js name, relative to the generated file', () => {
    expect(importSpecifier('/p/src/outbox.generated.ts', '/p/outbox.config.ts')).toBe(
      '../outbox.config.js',
    );
    expect(importSpecifier('/p/outbox.generated.ts', '/p/config/outbox.config.mts')).toBe(
      './config/outbox.config.mjs',
    );
  });
});

describe('the unified diff --check prints', () => {
  it('shows changed lines with three lines of context, as git does', () => {
    const before = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', ''].join('\n');
    const after = ['a', 'b', 'c', 'd', 'E', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', ''].join('\n');
    expect(unifiedDiff(before, after, 'old', 'new')).toMatchInlineSnapshot(`
      "--- old
      +++ new
      @@ -2,7 +2,7 @@
       b
       c
       d
      -e
      +E
       f
       g
       h
      @@ -10,3 +10,4 @@
       j
       k
       l
      +m
      "
    `);
  });

  it('is empty for equal texts and says when a final newline is missing', () => {
    expect(unifiedDiff('x\n', 'x\n', 'a', 'b')).toBe('');
    expect(unifiedDiff('x\n', 'x', 'a', 'b')).toContain('\\ No newline at end of file');
  });

  it('reproduces both texts from its lines, whatever the edit', () => {
    const words = 'abcab';
    for (let seed = 1; seed < 300; seed++) {
      const pick = (n: number) =>
        Array.from({ length: (seed * n) % 9 }, (_, i) => words[(seed * (i + n)) % 5]);
      const a = pick(7);
      const b = pick(11);
      const diff = unifiedDiff(`${a.join('\n')}\n`, `${b.join('\n')}\n`, 'a', 'b', 1000);
      if (a.join() === b.join()) continue;
      const body = diff.split('\n').slice(3, -1);
      expect(body.filter((l) => l[0] !== '+').map((l) => l.slice(1))).toEqual(a);
      expect(body.filter((l) => l[0] !== '-').map((l) => l.slice(1))).toEqual(b);
    }
  });
});
