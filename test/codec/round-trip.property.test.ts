import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { decodeEvent } from '../../src/codec/decode-event.js';
import { defineOutbox, event, type Outbox, receiver, ValidationError } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { eventCount } from '../fire/support.js';
import { openOutbox } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

/**
 * Runs per property per dialect: enough to meet every kind of value, few enough to stay
 * fast. `FC_RUNS=5000 FC_SEED=$RANDOM npx vitest run test/codec` explores further.
 */
const NUM_RUNS = Number(process.env.FC_RUNS ?? 120);
/** A fixed seed, so a failure reproduces (fast-check prints the counterexample). */
const SEED = Number(process.env.FC_SEED ?? 20_260_601);

class Money {
  constructor(
    readonly amount: number,
    readonly currency: string,
  ) {}
}

const Wide = event({ schema: z.object({ value: z.unknown() }) });
const Order = event({
  schema: z.object({
    orderId: z.string(),
    lines: z.array(z.object({ sku: z.string(), qty: z.number().int().min(1), price: z.number() })),
    note: z.string().nullable().optional(),
    tags: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])),
  }),
});

/** A string ending in half a surrogate pair: what `.slice()` can leave of an emoji. */
const halfSurrogate = fc
  .tuple(fc.string({ maxLength: 3 }), fc.integer({ min: 0xd800, max: 0xdfff }))
  .map(([s, unit]) => s + String.fromCharCode(unit));

const text = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 8 }) },
  { weight: 1, arbitrary: halfSurrogate },
);

/**
 * Values of every kind a caller might pass: JSON values (most), the documented encodings
 * (Date, bigint, bytes), and now and then one the codec must refuse.
 */
const { value: anyValue } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    { weight: 6, arbitrary: tie('leaf') },
    { weight: 2, arbitrary: fc.array(tie('value'), { maxLength: 4 }) },
    { weight: 2, arbitrary: fc.dictionary(text, tie('value'), { maxKeys: 4 }) },
    { weight: 1, arbitrary: fc.sparseArray(tie('value'), { maxLength: 3 }) },
  ),
  leaf: fc.oneof(
    { weight: 3, arbitrary: fc.constant(null) },
    { weight: 3, arbitrary: fc.boolean() },
    { weight: 4, arbitrary: fc.integer() },
    { weight: 4, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
    { weight: 8, arbitrary: text },
    // The documented encodings.
    { weight: 1, arbitrary: fc.bigInt() },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 6 }) },
    // Valid dates mostly, an invalid one now and then.
    { weight: 1, arbitrary: fc.date({ noInvalidDate: false }) },
    // Left out as a property; refused in an array.
    { weight: 1, arbitrary: fc.constant(undefined) },
    // Refused.
    { weight: 1, arbitrary: fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY) },
    { weight: 1, arbitrary: fc.constant(new Money(1, 'EUR')) },
  ),
}));

const headerName = fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 6 });
const anyHeaders = fc.dictionary(headerName, anyValue, { maxKeys: 3 });

/** What the codec must refuse, as its documentation states it (the oracle). */
function mustRefuse(v: unknown, inArray = false): boolean {
  if (v === undefined) return inArray;
  if (typeof v === 'number') return !Number.isFinite(v);
  if (typeof v === 'string') return v.includes('\u0000') || !isWellFormed(v);
  if (typeof v !== 'object' || v === null || v instanceof Uint8Array) return false;
  if (v instanceof Date) return Number.isNaN(v.getTime());
  if (Array.isArray(v)) {
    return Array.from({ length: v.length }, (_, i) => v[i]).some((x) => mustRefuse(x, true));
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== null && proto !== Object.prototype) return true;
  // A property set to undefined is left out, name and all.
  return Object.entries(v).some(([k, x]) => x !== undefined && (mustRefuse(k) || mustRefuse(x)));
}

function isWellFormed(s: string): boolean {
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

/** What an accepted value decodes as, by the codec's table: the value itself for JSON values. */
function documented(v: unknown): unknown {
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return Object.is(v, -0) ? 0 : v;
  if (Array.isArray(v)) return v.map((x) => documented(x));
  if (typeof v === 'object' && v !== null) {
    return Object.fromEntries(
      Object.entries(v)
        .filter(([, x]) => x !== undefined)
        .map(([k, x]) => [k, documented(x)]),
    );
  }
  return v;
}

describeEachDialect(
  'every payload its schema and the codec accept decodes back equal',
  (dialect) => {
    let db: TestDatabase;
    let outbox: Outbox<typeof config>;
    const config = defineOutbox({
      events: { 'misc.Wide': Wide, 'shop.Order': Order },
      receivers: { 'bus.forward': receiver(Wide, { handle: () => {} }) },
    });

    beforeAll(async () => {
      db = await dialect.open();
      outbox = await openOutbox(db, config);
    });
    afterAll(async () => {
      await outbox.close();
      await db.cleanup();
    });

    /** Read the stored row back through THE decoder. */
    async function readBack(sequence: string) {
      const rt = runtimeOf(outbox);
      const [stored] = await rt.store.readEvents({ sequences: [sequence] });
      return decodeEvent(rt.config, stored);
    }

    it('any value: refused exactly when the codec says so, else stored and decoded as its table says', async () => {
      const before = await eventCount(outbox);
      let accepted = 0;
      let refused = 0;
      await fc.assert(
        fc.asyncProperty(anyValue, anyHeaders, async (value, headers) => {
          const expectRefusal =
            mustRefuse(value) ||
            mustRefuse(headers) ||
            Object.keys(headers).some((k) => !k.trim()) ||
            // Left out as JSON, and then the schema's required key would be missing.
            value === undefined;
          const outcome = await outbox
            // @ts-expect-error: headers of any value, on purpose
            .fire('misc.Wide', { value }, { headers })
            .then(
              (fired) => ({ fired }),
              (error: unknown) => ({ error }),
            );
          if ('error' in outcome) {
            expect(outcome.error).toBeInstanceOf(ValidationError);
            expect((outcome.error as ValidationError).path).toMatch(/^(payload|headers)/);
            expect(expectRefusal).toBe(true);
            refused += 1;
            return;
          }
          expect(expectRefusal).toBe(false);
          accepted += 1;
          const decoded = await readBack(outcome.fired.sequence);
          expect(decoded.payload).toEqual(documented({ value }));
          expect(decoded.payload).toEqual(documented(outcome.fired.payload));
          expect(decoded.headers).toEqual(documented(headers));
        }),
        { numRuns: NUM_RUNS, seed: SEED },
      );
      // Not vacuous: both sides were met, and a refusal wrote nothing.
      expect(accepted).toBeGreaterThan(NUM_RUNS / 4);
      expect(refused).toBeGreaterThan(0);
      expect(await eventCount(outbox)).toBe(before + accepted);
    });

    it('a typed payload comes back as the schema parsed it', async () => {
      const order = fc.record(
        {
          orderId: text,
          lines: fc.array(
            fc.record({
              sku: text,
              qty: fc.integer({ min: 1, max: 10_000 }),
              price: fc.double({ noNaN: true, noDefaultInfinity: true }),
            }),
            { maxLength: 3 },
          ),
          note: fc.option(text, { nil: null }),
          tags: fc.dictionary(text, fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null)), {
            maxKeys: 3,
          }),
        },
        { requiredKeys: ['orderId', 'lines', 'tags'] },
      );
      await fc.assert(
        fc.asyncProperty(order, async (payload) => {
          const outcome = await outbox.fire('shop.Order', payload).then(
            (fired) => ({ fired }),
            (error: unknown) => ({ error }),
          );
          if ('error' in outcome) {
            expect(outcome.error).toBeInstanceOf(ValidationError);
            expect(mustRefuse(payload)).toBe(true);
            return;
          }
          expect(mustRefuse(payload)).toBe(false);
          const decoded = await readBack(outcome.fired.sequence);
          expect(decoded.payload).toEqual(documented(outcome.fired.payload));
          expect(decoded.payload).toEqual(documented(payload));
        }),
        { numRuns: NUM_RUNS, seed: SEED },
      );
    });
  },
);
