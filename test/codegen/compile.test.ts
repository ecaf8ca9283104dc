import { join } from 'node:path';
import { Project, ts } from 'ts-morph';
import { beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES } from './support.js';

/**
 * The generated files of the fixtures (their committed snapshots, which fixtures.test.ts
 * and capture.test.ts hold equal to codegen's output), compiled by the TypeScript compiler
 * together with code that uses them: typed the way each config says, and refusing a wrong
 * payload. ONE program for the file: each generated file and each file of code using it is
 * added to it and asked for its own diagnostics, so outboxkit's sources, zod's and
 * Sequelize's types are read and bound once, not once per fixture.
 */
const VALID = join(FIXTURES, 'valid/out');
const CAPTURE = join(FIXTURES, 'capture/out');

/** Code using the valid fixture's file. */
const VALID_USAGE = `
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

const VALID_WRONG = `
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

/** Code using the capture fixture's file: its rows typed from the models. */
const CAPTURE_USAGE = `
import { expectTypeOf } from 'vitest';
import type { Outbox } from '../../../../../src/index.js';
import type config from '../outbox.config.js';
import {
  createEmitters,
  installCapture,
  type EventName,
  type Emitters,
  type LineDeletedPayload,
  type LineInsertedPayload,
  type NoteInsertedPayload,
  type NoteRow,
  type ProductDeletedPayload,
  type ProductInsertedPayload,
  type ProductRow,
  type ProductUpdatedEvent,
  type ProductUpdatedHandler,
  type ProductUpdatedPayload,
} from './outbox.generated.js';

expectTypeOf<ProductRow['sku']>().toEqualTypeOf<string>();
expectTypeOf<ProductRow['price']>().toEqualTypeOf<string>(); // DECIMAL: text, not the model's number
expectTypeOf<ProductRow['launchedAt']>().toEqualTypeOf<string | null>(); // Date → ISO text
expectTypeOf<ProductRow['photo']>().toEqualTypeOf<string | null>(); // Buffer → base64
expectTypeOf<ProductRow['specs']>().toEqualTypeOf<{ volumeMl?: number; madeAt: string }>();
expectTypeOf<ProductRow['createdAt']>().toEqualTypeOf<string>(); // not in the model's type: DATE
expectTypeOf<ProductRow>().not.toHaveProperty('secret'); // excluded
const live: ProductRow['state'] = 'live';
// @ts-expect-error not one of the model's states
const gone: ProductRow['state'] = 'gone';

expectTypeOf<ProductUpdatedPayload['model']>().toEqualTypeOf<'shop.Product'>();
expectTypeOf<ProductUpdatedPayload['operation']>().toEqualTypeOf<'updated'>();
expectTypeOf<ProductUpdatedPayload['pk']>().toEqualTypeOf<string>();
expectTypeOf<ProductUpdatedPayload['changed']>().toEqualTypeOf<string[] | null>();
expectTypeOf<ProductUpdatedPayload['before']>().toEqualTypeOf<ProductRow>();
expectTypeOf<ProductUpdatedPayload['after']>().toEqualTypeOf<ProductRow>();
expectTypeOf<ProductInsertedPayload['before']>().toEqualTypeOf<null>();
expectTypeOf<ProductInsertedPayload['changed']>().toEqualTypeOf<null>();
expectTypeOf<ProductDeletedPayload['after']>().toEqualTypeOf<null>();
expectTypeOf<ProductUpdatedEvent['payload']>().toEqualTypeOf<ProductUpdatedPayload>();
expectTypeOf<Parameters<ProductUpdatedHandler>[0]['payload']>().toEqualTypeOf<ProductUpdatedPayload>();

// payload 'after': an insert carries after, a delete before; a composite key is an object.
expectTypeOf<LineInsertedPayload['pk']>().toEqualTypeOf<{ orderId: string; lineNo: number }>();
expectTypeOf<LineInsertedPayload>().toHaveProperty('after');
expectTypeOf<LineInsertedPayload>().not.toHaveProperty('before');
expectTypeOf<LineDeletedPayload>().toHaveProperty('before');
expectTypeOf<LineDeletedPayload>().not.toHaveProperty('after');
expectTypeOf<LineDeletedPayload['before']['quantity']>().toEqualTypeOf<number>();

// an untyped model: from its DataTypes (BIGINT as text); an extension's keys allowed.
expectTypeOf<NoteRow['body']>().toEqualTypeOf<string>();
expectTypeOf<NoteRow['views']>().toEqualTypeOf<string | null>();
expectTypeOf<NoteInsertedPayload['by']>().toEqualTypeOf<unknown>();

expectTypeOf<EventName>().toEqualTypeOf<
  | 'shop.line.deleted'
  | 'shop.line.inserted'
  | 'shop.note.inserted'
  | 'shop.product.deleted'
  | 'shop.product.inserted'
  | 'shop.product.updated'
>();
expectTypeOf<keyof Emitters>().toEqualTypeOf<never>();
expectTypeOf(installCapture).parameter(0).toEqualTypeOf<Outbox<typeof config>>();

export const onUpdate: ProductUpdatedHandler = async (event) => {
  const { before, after } = event.payload;
  if (before.state !== after.state) void after.price.padStart(8);
};
declare const outbox: Outbox<typeof config>;
installCapture(outbox);
void createEmitters;
void live;
void gone;
`;

const CAPTURE_WRONG = `
import type { ProductUpdatedHandler } from './outbox.generated.js';

export const wrong: ProductUpdatedHandler = async (event) => {
  void event.payload.after.nope;
  void event.payload.after.price.toFixed(2);
  void event.payload.before.launchedAt.getTime();
};
`;

let project: Project;

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
  project.addSourceFileAtPath(join(VALID, 'outbox.generated.ts'));
  project.addSourceFileAtPath(join(CAPTURE, 'outbox.generated.ts'));
});

/** `file`'s own diagnostics, the first line of each with its line number and code. */
function diagnosticsOf(file: string): string[] {
  return project
    .getSourceFileOrThrow(file)
    .getPreEmitDiagnostics()
    .map((d) => {
      const message = d.getMessageText();
      const first = typeof message === 'string' ? message : message.getMessageText();
      return `${d.getLineNumber()}: TS${d.getCode()} ${first.split('\n')[0]}`;
    });
}

/** Add (or replace) `dir/name` with `text` and return its diagnostics. */
function diagnostics(dir: string, name: string, text: string): string[] {
  project.createSourceFile(join(dir, name), text, { overwrite: true });
  return diagnosticsOf(join(dir, name));
}

describe('the generated file compiles, and its emitters are typed', () => {
  it('compiles on its own and with code that uses it as the config types it', () => {
    expect(diagnostics(VALID, 'usage.ts', VALID_USAGE)).toEqual([]);
    expect(diagnosticsOf(join(VALID, 'outbox.generated.ts'))).toEqual([]);
  });

  it('a wrong payload, or a targets or due function returning the wrong thing, does not compile', () => {
    expect(diagnostics(VALID, 'wrong.ts', VALID_WRONG)).toMatchInlineSnapshot(`
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

describe('the generated capture types compile and type a receiver', () => {
  it('compiles, and types rows from the models as their JSON form', () => {
    expect(diagnosticsOf(join(CAPTURE, 'outbox.generated.ts'))).toEqual([]);
    expect(diagnostics(CAPTURE, 'usage.ts', CAPTURE_USAGE)).toEqual([]);
  });

  it('refuses a receiver reading an attribute the model lacks, or a text value as a number or date', () => {
    expect(diagnostics(CAPTURE, 'wrong.ts', CAPTURE_WRONG)).toMatchInlineSnapshot(`
      [
        "5: TS2339 Property 'nope' does not exist on type 'ProductRow'.",
        "6: TS2551 Property 'toFixed' does not exist on type 'string'. Did you mean 'fixed'?",
        "7: TS18047 'event.payload.before.launchedAt' is possibly 'null'.",
        "7: TS2339 Property 'getTime' does not exist on type 'string'.",
      ]
    `);
  });
});

/**
 * The `@example` of `createEmitters` as the generated file carries it: the code between its
 * fence lines, the ` * ` of the comment taken off.
 */
function emittersExample(dir: string): string {
  const text = project.getSourceFileOrThrow(join(dir, 'outbox.generated.ts')).getFullText();
  const doc = text.slice(0, text.indexOf('export function createEmitters('));
  const start = doc.lastIndexOf('@example');
  const fenced = doc.slice(start).match(/```ts\n([\s\S]*?)\n \* ```/);
  if (!fenced) throw new Error(`no fenced @example above createEmitters in ${dir}`);
  return fenced[1]!
    .split('\n')
    .map((line) => line.replace(/^ \* ?/, ''))
    .join('\n');
}

/** The `@example` of `installCapture` as the generated file carries it (see above). */
function installExample(dir: string): string {
  const text = project.getSourceFileOrThrow(join(dir, 'outbox.generated.ts')).getFullText();
  const doc = text.slice(0, text.indexOf('export function installCapture('));
  const fenced = doc.slice(doc.lastIndexOf('@example')).match(/```ts\n([\s\S]*?)\n \* ```/);
  if (!fenced) throw new Error(`no fenced @example above installCapture in ${dir}`);
  return fenced[1]!
    .split('\n')
    .map((line) => line.replace(/^ \* ?/, ''))
    .join('\n');
}

describe("the generated file's @example", () => {
  it("installCapture's compiles as written beside the file", () => {
    const example = installExample(CAPTURE);
    expect(example).toContain('installCapture(outbox);');
    expect(diagnostics(CAPTURE, 'install-example.ts', example)).toEqual([]);
  });

  it('compiles as written beside the file, firing through the first emitter', () => {
    const example = emittersExample(VALID);
    expect(example).toContain('emit.orderPlaced(payload, { transaction })');
    expect(diagnostics(VALID, 'example.ts', example)).toEqual([]);
  });

  it('compiles for a config with no event fired by hand (captures only)', () => {
    expect(diagnostics(CAPTURE, 'example.ts', emittersExample(CAPTURE))).toEqual([]);
  });
});
