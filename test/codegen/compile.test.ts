import { join } from 'node:path';
import { Project, ts } from 'ts-morph';
import { beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES } from './support.js';

/**
 * The generated file of the valid fixture (its committed snapshot, which the fixture test
 * holds equal to codegen's output), compiled by the TypeScript compiler together with code
 * that uses it: typed the way the config says, and refusing a wrong payload.
 */
const DIR = join(FIXTURES, 'valid/out');

const USAGE = `
import { expectTypeOf } from 'vitest';
import type { Outbox } from '../../../../../src/index.js';
import type config from '../outbox.config.js';
import {
  createEmitters,
  type EventName,
  type OrderPlacedDue,
  type OrderPlacedHandler,
  type OrderPlacedInput,
  type OrderPlacedPayload,
  type OrderPlacedTargets,
  type OrderShippedPayload,
  type ReceiverKey,
} from './outbox.generated.js';

declare const outbox: Outbox<typeof config>;
const emit = createEmitters(outbox);

expectTypeOf<OrderPlacedPayload>().toEqualTypeOf<{
  orderId: string;
  totalCents: number;
  items: { sku: string; quantity: number }[];
  coupon?: string;
  channel: 'web' | 'store';
  note: string | null;
  placedAt: Date;
}>();
expectTypeOf<OrderPlacedInput['placedAt']>().toEqualTypeOf<Date | string>();
expectTypeOf<OrderShippedPayload['carrier']>().toEqualTypeOf<'dhl' | 'ups'>();
expectTypeOf<EventName>().toEqualTypeOf<'shop.OrderPlaced' | 'shop.OrderShipped'>();
expectTypeOf<ReceiverKey>().toEqualTypeOf<
  'audit.log' | 'bridge.forward' | 'carrier.notify' | 'stock.reserve'
>();
expectTypeOf(emit.orderShipped).parameter(0).toEqualTypeOf<OrderShippedPayload>();
expectTypeOf(emit.orderPlaced).returns.resolves.toHaveProperty('payload').toEqualTypeOf<OrderPlacedPayload>();
expectTypeOf<Parameters<OrderPlacedHandler>[0]['payload']>().toEqualTypeOf<OrderPlacedPayload>();
expectTypeOf<Parameters<OrderPlacedTargets>[0]['payload']>().toEqualTypeOf<OrderPlacedPayload>();
expectTypeOf<ReturnType<OrderPlacedTargets>>().toEqualTypeOf<
  Iterable<string> | Promise<Iterable<string>>
>();
expectTypeOf<Parameters<OrderPlacedDue>[0]['payload']>().toEqualTypeOf<OrderPlacedPayload>();
expectTypeOf<ReturnType<OrderPlacedDue>>().toEqualTypeOf<Date | Promise<Date>>();
export const skus: OrderPlacedTargets = (event) => event.payload.items.map((i) => i.sku);
export const dueAt: OrderPlacedDue = (event) => event.payload.placedAt;

export async function place(): Promise<void> {
  await emit.orderPlaced({
    orderId: 'o-1',
    totalCents: 1200,
    items: [{ sku: 'tea', quantity: 2 }],
    note: null,
    placedAt: new Date(),
  });
  await emit.orderShipped({ orderId: 'o-1', carrier: 'dhl' }, { idempotencyKey: 'ship:o-1' });
}
`;

const WRONG = `
import type { Outbox } from '../../../../../src/index.js';
import type config from '../outbox.config.js';
import { createEmitters, type OrderShippedDue, type OrderShippedTargets } from './outbox.generated.js';

declare const outbox: Outbox<typeof config>;
const emit = createEmitters(outbox);

export async function wrong(): Promise<void> {
  await emit.orderShipped({ orderId: 7, carrier: 'dhl' });
  await emit.orderShipped({ orderId: 'o-1', carrier: 'fedex' });
  await emit.orderShipped({ orderId: 'o-1' });
}

export const due: OrderShippedDue = (event) => event.payload.orderId;
export const targets: OrderShippedTargets = async (event) => event.payload.orderId.length;
`;

let project: Project;

function diagnostics(name: string, text: string): string[] {
  const file = project.createSourceFile(join(DIR, name), text, { overwrite: true });
  return file.getPreEmitDiagnostics().map((d) => {
    const message = d.getMessageText();
    const first = typeof message === 'string' ? message : message.getMessageText();
    return `${d.getLineNumber()}: TS${d.getCode()} ${first.split('\n')[0]}`;
  });
}

describe('the generated file compiles, and its emitters are typed', () => {
  beforeAll(() => {
    project = new Project({
      compilerOptions: {
        strict: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        skipLibCheck: true,
        noEmit: true,
        types: [],
      },
    });
    project.addSourceFileAtPath(join(DIR, 'outbox.generated.ts'));
  });

  it('compiles on its own and with code that uses it as the config types it', () => {
    expect(diagnostics('usage.ts', USAGE)).toEqual([]);
    const generated = project
      .getSourceFileOrThrow(join(DIR, 'outbox.generated.ts'))
      .getPreEmitDiagnostics()
      .map((d) => d.getMessageText());
    expect(generated).toEqual([]);
  });

  it('a wrong payload, or a targets or due function returning the wrong thing, does not compile', () => {
    expect(diagnostics('wrong.ts', WRONG)).toMatchInlineSnapshot(`
      [
        "10: TS2322 Type 'number' is not assignable to type 'string'.",
        "11: TS2322 Type '"fedex"' is not assignable to type '"dhl" | "ups"'.",
        "12: TS2345 Argument of type '{ orderId: string; }' is not assignable to parameter of type 'OrderShippedPayload'.",
        "15: TS2322 Type 'string' is not assignable to type 'Date | Promise<Date>'.",
        "16: TS2322 Type 'Promise<number>' is not assignable to type 'Iterable<string> | Promise<Iterable<string>>'.",
      ]
    `);
  });
});
