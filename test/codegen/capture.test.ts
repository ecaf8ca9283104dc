import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Sequelize } from 'sequelize';
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
 * That the generated types compile and type a receiver is in compile.test.ts (one program
 * for every fixture's generated file).
 */
const DIR = join(FIXTURES, 'capture');
const OUT = join(DIR, 'out/outbox.generated.ts');
const fixture = {
  cwd: DIR,
  out: 'out/outbox.generated.ts',
  catalogueDir: 'out',
  importFrom: SOURCE_IMPORT,
};

let captureRun: ReturnType<typeof generate> | undefined;

/** The capture fixture's codegen, once for the file: each run builds a TypeScript program. */
const captured = () => {
  captureRun ??= generate(fixture);
  return captureRun;
};

describe('codegen of captured models', () => {
  it('generates the row and envelope types, installCapture, and the catalogue', async () => {
    const result = await captured();
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

describe("the repo's own config: the shop, made per Sequelize by shopConfig(models)", () => {
  it('is followed through its factory: every receiver located, Order typed, the files up to date', async () => {
    // As .ci/run checks it: the generated file lives beside the example.
    const result = await generate({ cwd: REPO, out: 'examples/shop/outbox.generated.ts' });
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
    expect(typescript!.text).toContain("import type { Order as OrderModel } from './models.js';");
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
    const result = await captured();
    expect(result.ok && result.warnings.length).toBe(1);
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
