import { DataTypes, type ModelStatic, type Model as SequelizeModel } from 'sequelize';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { capture, defineOutbox, installCapture, type Outbox } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { postgresTestSchema, type TestDatabase } from '../../testing/databases.js';
import { openOutbox, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;

/** Every event in the log, oldest first, as topic, key and payload. */
async function logOf(outbox: Outbox) {
  return (await runtimeOf(outbox).store.readEvents({})).map((e) => ({
    topic: e.name,
    key: e.orderingKey,
    payload: (typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload) as Record<
      string,
      unknown
    >,
  }));
}

describeEachDialect('capture: the topic and ordering-key templates', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox;
  let Invoice: AnyModel;
  let Note: AnyModel;
  let Line: AnyModel;

  beforeAll(async () => {
    db = await dialect.open();
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    Invoice = db.sequelize.define(
      'Invoice',
      { status: DataTypes.STRING },
      { tableName: 'billing_invoices', timestamps: false, ...schema },
    );
    Note = db.sequelize.define(
      'Note',
      { body: DataTypes.STRING },
      { tableName: 'crm_notes', timestamps: false, ...schema },
    );
    Line = db.sequelize.define(
      'Line',
      {
        invoiceId: { type: DataTypes.INTEGER, primaryKey: true },
        n: { type: DataTypes.INTEGER, primaryKey: true },
        sku: DataTypes.STRING,
      },
      { tableName: 'invoice_lines', timestamps: false, ...schema },
    );
    await Promise.all([Invoice.sync(), Note.sync(), Line.sync()]);
    const config = defineOutbox({
      events: {},
      capture: [
        // {table} in the topic; a custom key template of {app}, {table} and {pk}.
        capture(Invoice, {
          app: 'billing',
          topic: 'billing.{table}.{operation}',
          orderingKey: '{app}/{table}/{pk}',
        }),
        // No ordering at all: orderingKey null (and no app needed for it).
        capture(Note, { topic: 'crm.{model}.{operation}', orderingKey: null }),
        // A composite key, {model} and {label} in the key.
        capture(Line, { app: 'billing', orderingKey: '{label}#{model}#{pk}' }),
      ],
    });
    outbox = await openOutbox(db, config, { clock: testClock().now });
    installCapture(outbox);
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  it('the {table} topic form names the table, and the declared events are those topics', async () => {
    expect(
      outbox.config.eventList.map((e) => e.name).filter((n) => n.startsWith('billing.billing')),
    ).toEqual([
      'billing.billing_invoices.deleted',
      'billing.billing_invoices.inserted',
      'billing.billing_invoices.updated',
    ]);
    const before = (await logOf(outbox)).length;
    const invoice = await Invoice.create({ status: 'draft' });
    await invoice.update({ status: 'sent' });
    await invoice.destroy();
    const id = invoice.get('id');
    expect((await logOf(outbox)).slice(before).map(({ topic, key }) => ({ topic, key }))).toEqual([
      { topic: 'billing.billing_invoices.inserted', key: `billing/billing_invoices/${id}` },
      { topic: 'billing.billing_invoices.updated', key: `billing/billing_invoices/${id}` },
      { topic: 'billing.billing_invoices.deleted', key: `billing/billing_invoices/${id}` },
    ]);
  });

  it('orderingKey: null writes events with no ordering key', async () => {
    const before = (await logOf(outbox)).length;
    await Note.bulkCreate([{ body: 'a' }, { body: 'b' }]);
    expect((await logOf(outbox)).slice(before).map(({ topic, key }) => ({ topic, key }))).toEqual([
      { topic: 'crm.note.inserted', key: null },
      { topic: 'crm.note.inserted', key: null },
    ]);
  });

  it('a custom key template fills {label}, {model} and a composite {pk} joined by ":"', async () => {
    const before = (await logOf(outbox)).length;
    await Line.create({ invoiceId: 7, n: 2, sku: 'tea' });
    const [written] = (await logOf(outbox)).slice(before);
    expect(written.topic).toBe('billing.line.inserted');
    expect(written.key).toBe('billing.Line#line#7:2');
    expect(written.payload.pk).toEqual({ invoiceId: 7, n: 2 });
  });
});

describe.skipIf(!inject('pgAvailable'))(
  'capture: PostgreSQL array and range values [postgres]',
  () => {
    let db: TestDatabase;
    let outbox: Outbox;
    let Slot: AnyModel;

    beforeAll(async () => {
      db = await postgresTestSchema();
      Slot = db.sequelize.define(
        'Slot',
        {
          tags: DataTypes.ARRAY(DataTypes.STRING),
          seats: DataTypes.ARRAY(DataTypes.INTEGER),
          during: DataTypes.RANGE(DataTypes.INTEGER),
          window: DataTypes.RANGE(DataTypes.DATE),
        },
        { tableName: 'slots', timestamps: false, schema: db.outboxOptions.schema },
      );
      await Slot.sync();
      outbox = await openOutbox(
        db,
        defineOutbox({
          events: {},
          capture: [capture(Slot, { app: 'venue', payload: 'beforeAndAfter' })],
        }),
        { clock: testClock().now },
      );
      installCapture(outbox);
    });
    afterAll(async () => {
      await outbox.close();
      await db.cleanup();
    });

    it('arrays and ranges written through capture reach the envelope as JSON, before and after', async () => {
      const from = new Date('2031-03-01T10:00:00.000Z');
      const to = new Date('2031-03-01T12:00:00.000Z');
      const slot = await Slot.create({
        tags: ['vip', 'aisle'],
        seats: [1, 2, 3],
        during: [10, 20],
        window: [from, to],
      });
      await slot.update({ seats: [4], during: [30, 40] });
      const [inserted, updated] = await logOf(outbox);
      expect(inserted.topic).toBe('venue.slot.inserted');
      const after = inserted.payload.after as Record<string, unknown>;
      expect(after.tags).toEqual(['vip', 'aisle']);
      expect(after.seats).toEqual([1, 2, 3]);
      // A range is Sequelize's bounds pair, each bound's value in its JSON form.
      expect(after.during).toEqual([
        { value: 10, inclusive: true },
        { value: 20, inclusive: false },
      ]);
      expect(after.window).toEqual([
        { value: from.toISOString(), inclusive: true },
        { value: to.toISOString(), inclusive: false },
      ]);
      expect(updated.topic).toBe('venue.slot.updated');
      expect(updated.payload.changed).toEqual(['seats', 'during']);
      expect((updated.payload.before as Record<string, unknown>).seats).toEqual([1, 2, 3]);
      expect((updated.payload.after as Record<string, unknown>).seats).toEqual([4]);
      expect((updated.payload.after as Record<string, unknown>).during).toEqual([
        { value: 30, inclusive: true },
        { value: 40, inclusive: false },
      ]);
      // What the row holds is what the envelope said.
      const [row] = (await db.sequelize.query(
        `SELECT during::text AS during, seats::text AS seats FROM "${db.outboxOptions.schema}".slots`,
        { type: 'SELECT' },
      )) as { during: string; seats: string }[];
      expect(row).toEqual({ during: '[30,40)', seats: '{4}' });
    });
  },
);
