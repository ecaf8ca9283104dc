import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Model as SequelizeModel } from 'sequelize';
import { DataTypes, type ModelAttributes, type ModelStatic, Sequelize } from 'sequelize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diffCatalogues } from '../../catalogue/diff.js';
import {
  type CapturePayload,
  capture,
  defineOutbox,
  installCapture,
  type Outbox,
} from '../../src/index.js';
import { buildCatalogue, type CatalogueEvent } from '../../src/introspect/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;

/** A model on a Sequelize nothing connects to: the catalogue needs its attributes only. */
const offline = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false });
afterAll(() => offline.close());

const PRODUCT: ModelAttributes = {
  sku: { type: DataTypes.STRING, primaryKey: true },
  title: { type: DataTypes.STRING, allowNull: false },
  blurb: DataTypes.TEXT,
  price: { type: DataTypes.DECIMAL(10, 2), allowNull: false },
  views: DataTypes.BIGINT,
  stock: { type: DataTypes.INTEGER, allowNull: false },
  rating: DataTypes.FLOAT,
  active: { type: DataTypes.BOOLEAN, allowNull: false },
  launchedAt: DataTypes.DATE,
  launchDay: DataTypes.DATEONLY,
  photo: DataTypes.BLOB,
  specs: DataTypes.JSON,
  state: { type: DataTypes.ENUM('draft', 'live', 'retired'), allowNull: false },
  ref: DataTypes.UUID,
  secret: DataTypes.STRING,
};

let defined = 0;
function product(attributes: ModelAttributes = PRODUCT): AnyModel {
  // A model name of its own per definition: one Sequelize keeps one model per name.
  return offline.define(`Product${++defined}`, attributes, { tableName: 'products' });
}

function catalogueOf(model: AnyModel, payload: CapturePayload = 'after') {
  const config = defineOutbox({
    events: {},
    capture: [
      capture(model, {
        app: 'shop',
        payload,
        ...('secret' in model.getAttributes() ? { exclude: ['secret'] } : {}),
        topic: 'shop.product.{operation}',
      }),
    ],
  });
  return buildCatalogue(config);
}

const eventOf = (events: readonly CatalogueEvent[], name: string) => {
  const found = events.find((e) => e.name === name);
  if (!found) throw new Error(`no event ${name} in ${events.map((e) => e.name).join(', ')}`);
  return found;
};
const fieldTypes = (e: CatalogueEvent, prefix: string) =>
  Object.fromEntries(
    e.fields.filter((f) => f.name.startsWith(prefix)).map((f) => [f.name, f.type]),
  );

describe("a captured topic's catalogue payload schema, from the model's attributes", () => {
  it('types each captured attribute in its JSON form, nullable where allowNull, secret left out', () => {
    const updated = eventOf(catalogueOf(product()).events, 'shop.product.updated');
    expect(fieldTypes(updated, 'after.')).toEqual({
      'after.active': 'boolean',
      'after.blurb': 'string | null',
      'after.createdAt': 'string (date-time)',
      'after.launchDay': 'string (date) | null',
      'after.launchedAt': 'string (date-time) | null',
      'after.photo': 'string | null',
      'after.price': 'string',
      'after.rating': 'number | "NaN" | "Infinity" | "-Infinity" | null',
      'after.ref': 'string (uuid) | null',
      'after.sku': 'string',
      'after.specs': 'unknown',
      'after.state': '"draft" | "live" | "retired"',
      'after.stock': 'integer',
      'after.title': 'string',
      'after.updatedAt': 'string (date-time)',
      'after.views': 'string | null',
    });
    const schema = updated.schema as {
      properties: Record<string, { properties?: Record<string, unknown> }>;
    };
    expect(schema.properties.after?.properties?.photo).toMatchObject({
      anyOf: [{ type: 'string', contentEncoding: 'base64' }, { type: 'null' }],
    });
    expect(schema.properties.after?.properties?.views).toMatchObject({
      anyOf: [{ type: 'string', pattern: '^-?\\d+$' }, { type: 'null' }],
    });
  });

  it('lists the envelope: model, operation, pk, changed and occurred_at, all required', () => {
    const e = eventOf(catalogueOf(product()).events, 'shop.product.updated');
    const top = e.fields.filter((f) => !f.name.includes('.'));
    expect(top.map((f) => [f.name, f.type, f.required])).toEqual([
      ['after', 'object', true],
      ['changed', 'array<string> | null', true],
      ['model', expect.stringMatching(/^"shop\.Product\d+"$/), true],
      ['occurred_at', 'string (date-time)', true],
      ['operation', '"updated"', true],
      ['pk', 'string', true],
    ]);
    const inserted = eventOf(catalogueOf(product()).events, 'shop.product.inserted');
    expect(inserted.fields.find((f) => f.name === 'changed')?.type).toBe('null');
  });

  it('carries before/after per payload mode and operation; keys carries neither', () => {
    const sides = (payload: CapturePayload, operation: string) => {
      const e = eventOf(catalogueOf(product(), payload).events, `shop.product.${operation}`);
      return Object.fromEntries(
        e.fields
          .filter((f) => f.name === 'before' || f.name === 'after')
          .map((f) => [f.name, f.type]),
      );
    };
    expect(sides('keys', 'updated')).toEqual({});
    expect(sides('after', 'inserted')).toEqual({ after: 'object' });
    expect(sides('after', 'updated')).toEqual({ after: 'object' });
    expect(sides('after', 'deleted')).toEqual({ before: 'object' });
    expect(sides('beforeAndAfter', 'inserted')).toEqual({ before: 'null', after: 'object' });
    expect(sides('beforeAndAfter', 'updated')).toEqual({ before: 'object', after: 'object' });
    expect(sides('beforeAndAfter', 'deleted')).toEqual({ before: 'object', after: 'null' });
  });

  it('a composite key is an object of its attributes', () => {
    const Line = offline.define(
      `Line${++defined}`,
      {
        orderId: { type: DataTypes.STRING, primaryKey: true },
        lineNo: { type: DataTypes.INTEGER, primaryKey: true },
        qty: DataTypes.INTEGER,
      },
      { timestamps: false },
    );
    const e = eventOf(catalogueOf(Line, 'keys').events, 'shop.product.deleted');
    expect(fieldTypes(e, 'pk')).toEqual({
      pk: 'object',
      'pk.lineNo': 'integer',
      'pk.orderId': 'string',
    });
  });

  it('arrays and ranges (PostgreSQL types) as the envelope keeps them', () => {
    const Slot = offline.define(`Slot${++defined}`, {
      tags: DataTypes.ARRAY(DataTypes.STRING),
      during: DataTypes.RANGE(DataTypes.DATE),
    });
    const e = eventOf(catalogueOf(Slot).events, 'shop.product.inserted');
    expect(fieldTypes(e, 'after.')).toMatchObject({
      'after.tags': 'array<string> | null',
      'after.during': 'array<object | string (date-time) | null> | null',
    });
  });
});

describe('the catalogue diff of a captured model', () => {
  const withAttributes = (edit: (a: Record<string, unknown>) => void) => {
    const attributes: Record<string, unknown> = { ...PRODUCT };
    edit(attributes);
    return catalogueOf(product(attributes as ModelAttributes));
  };
  // The model label holds the definition's name (Product1, Product2…): a test artefact.
  const sameLabel = (c: ReturnType<typeof catalogueOf>) =>
    JSON.parse(JSON.stringify(c).replace(/shop\.Product\d+/g, 'shop.Product')) as typeof c;

  it('removing a captured attribute is breaking, on every topic that carries it', () => {
    const before = sameLabel(withAttributes(() => {}));
    const after = sameLabel(
      withAttributes((a) => {
        delete a.blurb;
      }),
    );
    const diff = diffCatalogues(before, after);
    expect(diff.breaking.map((c) => c.message)).toEqual([
      'shop.product.deleted: field before.blurb removed',
      'shop.product.inserted: field after.blurb removed',
      'shop.product.updated: field after.blurb removed',
    ]);
    expect(diff.compatible).toEqual([]);
  });

  it("narrowing or changing an attribute's type is breaking", () => {
    const before = sameLabel(withAttributes(() => {}));
    const after = sameLabel(
      withAttributes((a) => {
        a.blurb = { type: DataTypes.TEXT, allowNull: false }; // string | null → string
        a.stock = DataTypes.BIGINT; // integer → text
      }),
    );
    const messages = diffCatalogues(before, after).breaking.map((c) => c.message);
    expect(messages).toContain(
      'shop.product.updated: field after.blurb type changed from string | null to string',
    );
    expect(messages).toContain(
      'shop.product.updated: field after.stock type changed from integer to string | null',
    );
  });

  it('adding an attribute is compatible (events recorded before it lack it)', () => {
    const before = sameLabel(withAttributes(() => {}));
    const after = sameLabel(
      withAttributes((a) => {
        a.colour = DataTypes.STRING;
      }),
    );
    const diff = diffCatalogues(before, after);
    expect(diff.breaking).toEqual([]);
    expect(diff.compatible.map((c) => c.message)).toEqual([
      'shop.product.deleted: optional field before.colour added',
      'shop.product.inserted: optional field after.colour added',
      'shop.product.updated: optional field after.colour added',
    ]);
  });
});

/**
 * The schema is a promise about real events: every envelope capture writes, on each
 * dialect and in each payload mode, validates against its topic's catalogue schema.
 */
describeEachDialect("captured envelopes validate against the catalogue's schema", (dialect) => {
  let db: TestDatabase;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);

  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db?.cleanup());

  for (const payload of ['keys', 'after', 'beforeAndAfter'] as const) {
    it(`payload ${payload}: insert, update, delete`, async () => {
      const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
      const attributes: ModelAttributes = { ...PRODUCT };
      const Product = db.sequelize.define(`Product_${payload}`, attributes, {
        tableName: `cat_products_${payload.toLowerCase()}`,
        ...schema,
      });
      await Product.sync();
      const config = defineOutbox({
        events: {},
        capture: [
          capture(Product, {
            app: 'shop',
            payload,
            exclude: ['secret'],
            topic: 'shop.product.{operation}',
          }),
        ],
      });
      const outbox: Outbox = await openOutbox(db, config);
      installCapture(outbox);
      const row = await Product.create({
        sku: 'mug',
        title: 'Mug',
        price: '12.50',
        views: '9007199254740993',
        stock: 3,
        rating: 4.5,
        active: true,
        launchedAt: new Date('2031-01-02T03:04:05.000Z'),
        launchDay: '2031-01-02',
        photo: Buffer.from('png'),
        specs: { volumeMl: 330 },
        state: 'live',
        ref: '8f14e45f-ceea-467a-9af3-2b8b4f1c6c3e',
      });
      await row.update({ stock: 2, blurb: null });
      await Product.update({ state: 'retired' }, { where: { sku: 'mug' } });
      await row.destroy();

      const catalogue = buildCatalogue(config);
      const events = await runtimeOf(outbox).store.readEvents({});
      expect(events.map((e) => e.name)).toEqual([
        'shop.product.inserted',
        'shop.product.updated',
        'shop.product.updated',
        'shop.product.deleted',
      ]);
      for (const e of events) {
        const payloadOf = typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload;
        const validate = ajv.compile(eventOf(catalogue.events, e.name).schema);
        expect({
          event: e.name,
          valid: validate(payloadOf),
          errors: validate.errors ?? null,
        }).toEqual({
          event: e.name,
          valid: true,
          errors: null,
        });
      }
      await outbox.close();
    });
  }
});
