/**
 * Capture on an outbox with a tenant column: `capture(Model, { tenant: 'tenantId' })`
 * reads the row's tenant into its event (keys and ordering per tenant, context.tenant)
 * and into the envelope (`tenant`), whatever scope the write runs in.
 */
import { DataTypes, type ModelStatic, Sequelize, type Model as SequelizeModel } from 'sequelize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  capture,
  defineOutbox,
  event,
  installCapture,
  type Outbox,
  receiver,
  withTenant,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { openOutbox } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;

describeEachDialect('tenants: capture reads the row’s tenant', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox;
  let Invoice: AnyModel;
  let Memo: AnyModel;
  const seen: { tenant: unknown; envelope: unknown }[] = [];

  beforeAll(async () => {
    db = await dialect.open();
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    Invoice = db.sequelize.define(
      'Invoice',
      { tenantId: DataTypes.STRING, total: DataTypes.INTEGER },
      { tableName: 'tn_invoices', timestamps: false, ...schema },
    );
    Memo = db.sequelize.define(
      'Memo',
      { text: DataTypes.STRING },
      { tableName: 'tn_memos', timestamps: false, ...schema },
    );
    await Promise.all([Invoice.sync(), Memo.sync()]);
    const config = defineOutbox({
      events: { 'shop.Noted': event({ schema: z.object({ n: z.number() }) }) },
      capture: [
        capture(Invoice, { app: 'billing', tenant: 'tenantId' }),
        capture(Memo, { app: 'billing', operations: ['inserted'] }),
      ],
      receivers: {
        'billing.seen': receiver('billing.invoice.*', {
          handle: (e, context) => void seen.push({ tenant: context.tenant, envelope: e.payload }),
        }),
      },
      settings: { tenancy: 'column' },
    });
    outbox = await openOutbox(db, config);
    installCapture(outbox, db.sequelize);
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  it('a captured row’s event is the row’s tenant’s, in the event and in the envelope, whatever the scope', async () => {
    await Invoice.create({ tenantId: 'acme', total: 5 });
    await withTenant('globex', () => Invoice.create({ tenantId: 'initech', total: 6 }));
    await Invoice.create({ tenantId: null, total: 7 });
    await withTenant('globex', () => Memo.create({ text: 'scoped' }));
    const events = await runtimeOf(outbox).store.readEvents({});
    expect(events.map((e) => [e.name, e.tenant, e.orderingKey])).toEqual([
      ['billing.invoice.inserted', 'acme', 'billing.Invoice:1'],
      ['billing.invoice.inserted', 'initech', 'billing.Invoice:2'],
      ['billing.invoice.inserted', null, 'billing.Invoice:3'],
      // A model without a tenant attribute: the tenant of the scope around the write.
      ['billing.memo.inserted', 'globex', 'billing.Memo:1'],
    ]);
    await drainOutbox(outbox);
    expect(seen.map((s) => [s.tenant, (s.envelope as { tenant: unknown }).tenant])).toEqual([
      ['acme', 'acme'],
      ['initech', 'initech'],
      [null, null],
    ]);
  });

  it('a capture’s tenant must be an attribute of the model, and needs tenancy', () => {
    expect(() => capture(Invoice, { app: 'billing', tenant: 'tenant' })).toThrow(
      /capture\(Invoice\)\.tenant names "tenant", which Invoice does not have \(its attributes: id, tenantId, total\)/,
    );
    expect(() =>
      defineOutbox({
        events: {},
        capture: [capture(Invoice, { app: 'billing', tenant: 'tenantId' })],
      }),
    ).toThrow(ConfigurationError);
  });
});

describe('tenants: codegen of a capture with a tenant attribute', () => {
  it('the generated envelope type has tenant: string | null only where the capture declares one', async () => {
    const { captureParts } = await import('../../codegen/generate-capture.js');
    const sequelize = new Sequelize('sqlite::memory:', { logging: false });
    const Bill = sequelize.define('Bill', { tenantId: DataTypes.STRING });
    const Note = sequelize.define('Note', { text: DataTypes.STRING });
    const config = defineOutbox({
      events: {},
      capture: [
        capture(Bill, { app: 'billing', tenant: 'tenantId', operations: ['inserted'] }),
        capture(Note, { app: 'billing', operations: ['inserted'] }),
      ],
      settings: { tenancy: 'column' },
    });
    const parts = captureParts(config, new Map());
    const names = (topic: string) =>
      (
        parts.payload(topic, 'P', []) as { properties: { name: string; type: string }[] }
      ).properties.map((p) => `${p.name}: ${p.type}`);
    expect(names('billing.bill.inserted')).toContain('tenant: string | null');
    expect(names('billing.note.inserted').some((p) => p.startsWith('tenant'))).toBe(false);
    await sequelize.close();
  });
});
