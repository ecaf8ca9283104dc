import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Sequelize } from 'sequelize';
import { Project, ts } from 'ts-morph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generate } from '../../codegen/run-codegen.js';
import {
  ConfigurationError,
  capture,
  createOutbox,
  defineOutbox,
  type Outbox,
  silentLogger,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { FIXTURES, REPO, SOURCE_IMPORT } from './support.js';

/**
 * Codegen of a config with `capture: [...]`: the envelope types of the captured topics,
 * typed from each model's `Attributes` (a class model, an interface model with a composite
 * key, an untyped one), and `installCapture(outbox)` wiring exactly the declared models.
 */
const DIR = join(FIXTURES, 'capture');
const OUT = join(DIR, 'out/outbox.generated.ts');
const fixture = {
  cwd: DIR,
  out: 'out/outbox.generated.ts',
  catalogueDir: 'out',
  importFrom: SOURCE_IMPORT,
};

describe('codegen of captured models', () => {
  it('generates the row and envelope types, installCapture, and the catalogue', async () => {
    const result = await generate(fixture);
    if (!result.ok) throw new Error(result.message);
    expect(result.warnings).toEqual([
      'capture(Note): its instance type is not an exported declaration of the project (declare the model as an exported interface or class); its rows are typed from its DataTypes alone',
    ]);
    const [typescript, json, markdown] = result.files;
    await expect(typescript!.text).toMatchFileSnapshot(OUT);
    await expect(json!.text).toMatchFileSnapshot(join(DIR, 'out/catalogue.json'));
    await expect(markdown!.text).toMatchFileSnapshot(join(DIR, 'out/catalogue.md'));
    // A captured topic is written by its model's writes: no emitter, no input type.
    expect(typescript!.text).not.toMatch(/productUpdated\(|ProductUpdatedInput/);
    expect(result.catalogue.events.map((e) => e.name)).toEqual([
      'shop.line.deleted',
      'shop.line.inserted',
      'shop.note.inserted',
      'shop.product.deleted',
      'shop.product.inserted',
      'shop.product.updated',
    ]);
  });
});

const USAGE = `
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

const WRONG = `
import type { ProductUpdatedHandler } from './outbox.generated.js';

export const wrong: ProductUpdatedHandler = async (event) => {
  void event.payload.after.nope;
  void event.payload.after.price.toFixed(2);
  void event.payload.before.launchedAt.getTime();
};
`;

describe("the repo's own config: the shop, made per Sequelize by shopConfig(models)", () => {
  it('is followed through its factory: every receiver located, Order typed, the files up to date', async () => {
    const result = await generate({ cwd: REPO });
    if (!result.ok) throw new Error(result.message);
    expect(result.warnings).toEqual([]);
    const receivers = [
      ...result.catalogue.events.flatMap((e) => e.receivers),
      ...result.catalogue.wildcardReceivers,
    ];
    expect(receivers.filter((r) => r.location === null).map((r) => r.key)).toEqual([]);
    expect(receivers.find((r) => r.key === 'shop.orderHistory')?.location).toMatch(
      /^examples\/shop\/receivers\.ts:\d+$/,
    );
    for (const file of result.files) expect(readFileSync(file.path, 'utf8')).toBe(file.text);
    const [typescript] = result.files;
    expect(typescript!.text).toContain(
      "import type { Order as OrderModel } from '../examples/shop/models.js';",
    );
    expect(typescript!.text).toContain(
      'export function installCapture(outbox: Outbox<Config>): void',
    );
  });
});

describe('codegen checks a handler of a captured topic against its envelope type', () => {
  it('a handler reading a DECIMAL as a number is an error naming the receiver and the generated type', async () => {
    const result = await generate({
      ...fixture,
      cwd: join(FIXTURES, 'capture-mismatch'),
      check: true,
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.mismatches?.map((m) => [m.receiver, m.event, m.location])).toEqual([
      ['pricing.reprice', 'shop.product.updated', 'outbox.config.ts:5'],
    ]);
    expect(result.message).toContain('Type the parameter as the generated ProductUpdatedEvent');
    expect(result.mismatches?.[0]?.payloadType).toBe('ProductUpdatedPayload');
  });

  it("the fixture's handlers, which fit, pass", async () => {
    const result = await generate(fixture);
    expect(result.ok && result.warnings.length).toBe(1);
  });
});

describe('the generated capture types compile and type a receiver', () => {
  let project: Project;
  const diagnostics = (name: string, text: string) => {
    const file = project.createSourceFile(join(DIR, 'out', name), text, { overwrite: true });
    return file.getPreEmitDiagnostics().map((d) => {
      const message = d.getMessageText();
      const first = typeof message === 'string' ? message : message.getMessageText();
      return `${d.getLineNumber()}: TS${d.getCode()} ${first.split('\n')[0]}`;
    });
  };
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
    project.addSourceFileAtPath(OUT);
  });

  it('compiles, and types rows from the models as their JSON form', () => {
    expect(
      project
        .getSourceFileOrThrow(OUT)
        .getPreEmitDiagnostics()
        .map((d) => d.getMessageText()),
    ).toEqual([]);
    expect(diagnostics('usage.ts', USAGE)).toEqual([]);
  });

  it('refuses a receiver reading an attribute the model lacks, or a text value as a number or date', () => {
    expect(diagnostics('wrong.ts', WRONG)).toMatchInlineSnapshot(`
      [
        "5: TS2339 Property 'nope' does not exist on type 'ProductRow'.",
        "6: TS2551 Property 'toFixed' does not exist on type 'string'. Did you mean 'fixed'?",
        "7: TS18047 'event.payload.before.launchedAt' is possibly 'null'.",
        "7: TS2339 Property 'getTime' does not exist on type 'string'.",
      ]
    `);
  });
});

describe('the generated installCapture(outbox)', () => {
  let models: typeof import('../fixtures/codegen/capture/models.js');
  let generated: typeof import('../fixtures/codegen/capture/out/outbox.generated.js');
  let config: typeof import('../fixtures/codegen/capture/outbox.config.js')['default'];
  let outbox: Outbox<typeof config>;
  const others: Sequelize[] = [];

  beforeAll(async () => {
    models = await import('../fixtures/codegen/capture/models.js');
    generated = await import('../fixtures/codegen/capture/out/outbox.generated.js');
    config = (await import('../fixtures/codegen/capture/outbox.config.js')).default;
    await models.sequelize.sync();
    outbox = createOutbox(config, {
      sequelize: models.sequelize,
      logger: silentLogger,
      wakeup: null,
    });
    await outbox.migrate();
  });
  afterAll(async () => {
    await outbox?.close();
    for (const s of others) await s.close();
    await models?.sequelize.close();
  });

  const log = async () =>
    (await runtimeOf(outbox).store.readEvents({})).map((e) => ({
      name: e.name,
      key: e.orderingKey,
      pk: (typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload).pk,
    }));

  it('wires exactly the declared models, once however often it is called', async () => {
    generated.installCapture(outbox);
    generated.installCapture(outbox); // idempotent
    expect(generated.capturedModels).toEqual(['Product', 'Line', 'Note']);
    await models.Product.create({
      sku: 'mug',
      title: 'Mug',
      price: 12.5,
      specs: { madeAt: new Date() },
    });
    await models.LineModel.create({ orderId: 'o-1', lineNo: 1, quantity: 2 });
    await models.Note.create({ body: 'hello' });
    expect(await log()).toEqual([
      { name: 'shop.product.inserted', key: 'shop.Product:mug', pk: 'mug' },
      { name: 'shop.line.inserted', key: 'shop.Line:o-1:1', pk: { orderId: 'o-1', lineNo: 1 } },
      { name: 'shop.note.inserted', key: 'shop.Note:1', pk: 1 },
    ]);
  });

  it('a declared model not defined on the outbox’s Sequelize is an error naming it', () => {
    const other = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false });
    others.push(other);
    const elsewhere = createOutbox(config, {
      sequelize: other,
      logger: silentLogger,
      wakeup: null,
    });
    expect(() => generated.installCapture(elsewhere)).toThrow(ConfigurationError);
    expect(() => generated.installCapture(elsewhere)).toThrow(
      'installCapture: the captured model Product is not defined on this Sequelize (sequelize.define or Model.init with it); define it there, or drop its capture',
    );
  });

  it('a config capturing other models than the file was generated for is refused: regenerate', () => {
    const drifted = defineOutbox({
      events: {},
      capture: [capture(models.Product, { app: 'shop' })],
    });
    const other = createOutbox(drifted, {
      sequelize: models.sequelize,
      logger: silentLogger,
      wakeup: null,
    });
    expect(() => generated.installCapture(other as never)).toThrow(
      'installCapture: the config captures Product, but this file was generated for Product, Line, Note: run `npx outbox codegen`',
    );
  });
});
