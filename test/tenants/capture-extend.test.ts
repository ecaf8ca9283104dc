/**
 * A capture's `extend` names the event's tenant (the topic-outbox reference: the tenant
 * comes from the scope "or from these values", `extra_field_values`; "it is the row's
 * tenant unless extra_field_values sets it"): over the row's tenant attribute and the
 * scope, checked as fire() checks a tenant.
 */
import { DataTypes, type ModelStatic, type Model as SequelizeModel } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  capture,
  defineOutbox,
  installCapture,
  type Outbox,
  receiver,
  withTenant,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;

describeEachDialect('tenants: a capture’s extend names the tenant', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox;
  let Line: AnyModel;
  const seen: { tenant: unknown; envelope: unknown }[] = [];

  beforeAll(async () => {
    db = await dialect.open();
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    Line = db.sequelize.define(
      'Line',
      { owner: DataTypes.STRING, tenantId: DataTypes.STRING, sku: DataTypes.STRING },
      { tableName: 'tx_lines', timestamps: false, ...schema },
    );
    await Line.sync();
    const config = defineOutbox({
      events: {},
      capture: [
        capture(Line, {
          app: 'shop',
          tenant: 'tenantId',
          operations: ['inserted'],
          // The line's tenant is its owner's (as if read from a parent row); 'none' is no one's;
          // undefined leaves the row's own.
          extend: (change) => {
            const owner = (change.after as { owner: string | null }).owner;
            if (owner === null) return undefined;
            return { tenant: owner === 'none' ? null : owner === 'bad' ? '' : owner };
          },
        }),
      ],
      receivers: {
        'shop.seen': receiver('shop.line.*', {
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

  it('the extension’s tenant is the event’s, over the row’s and the scope’s; the envelope keeps the row’s', async () => {
    await Line.create({ owner: 'acme', tenantId: 'initech', sku: 'a' });
    await withTenant('globex', () => Line.create({ owner: null, tenantId: 'initech', sku: 'b' }));
    await withTenant('globex', () => Line.create({ owner: 'none', tenantId: 'initech', sku: 'c' }));
    const events = await runtimeOf(outbox).store.readEvents({});
    expect(events.map((e) => e.tenant)).toEqual(['acme', 'initech', null]);
    await outbox.runRelay({ untilIdle: true });
    expect(seen.map((s) => (s.envelope as { tenant: unknown }).tenant)).toEqual([
      'initech',
      'initech',
      'initech',
    ]);
    expect(seen.map((s) => s.tenant ?? null).sort()).toEqual(['acme', 'initech', null].sort());
  });

  it('an extension’s tenant fire() would refuse fails the write, and nothing is written', async () => {
    const before = await Line.count();
    await expect(Line.create({ owner: 'bad', tenantId: 'initech', sku: 'd' })).rejects.toThrow(
      /tenant/,
    );
    expect(await Line.count()).toBe(before);
  });
});
