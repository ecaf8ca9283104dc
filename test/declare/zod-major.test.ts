import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as zMini } from 'zod/mini';
import { z as z3 } from 'zod/v3';
import { ConfigurationError, defineOutbox, event } from '../../src/index.js';

/** The message defineOutbox gives for one event declared with `schema`. */
function messageFor(schema: unknown): string {
  try {
    // @ts-expect-error: a schema that is not a zod 4 one is the point
    defineOutbox({ events: { 'shop.OrderPlaced': event({ schema }) } });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as ConfigurationError).message;
  }
  throw new Error('expected a ConfigurationError');
}

describe('an event schema from another zod major or library names the zod 4 it needs', () => {
  it('a zod 3 schema is refused, saying zod 4 is required and that zod 3 was found', () => {
    expect(messageFor(z3.object({ orderId: z3.string() }))).toMatchInlineSnapshot(`
      "Invalid outbox config:
        events["shop.OrderPlaced"].schema must be a zod 4 schema: z.object({ ... }) from import { z } from 'zod', with zod@^4 installed (got a zod 3 schema)"
    `);
  });

  it('a zod/mini schema is refused, pointing at the classic import', () => {
    expect(messageFor(zMini.object({ orderId: zMini.string() }))).toContain(
      "from import { z } from 'zod', with zod@^4 installed (got a zod/mini schema)",
    );
  });

  it('another Standard Schema library is named by its vendor', () => {
    const schema = { '~standard': { version: 1, vendor: 'valibot', validate: () => ({}) } };
    expect(messageFor(schema)).toContain('(got a valibot schema)');
  });

  it('a plain object is still shown as it is', () => {
    expect(messageFor({ orderId: 'string' })).toContain('(got {"orderId":"string"})');
  });

  it('a zod 4 schema passes', () => {
    const config = defineOutbox({
      events: { 'shop.OrderPlaced': event({ schema: z.object({ orderId: z.string() }) }) },
    });
    expect(config.eventList.map((e) => e.name)).toEqual(['shop.OrderPlaced']);
  });
});
