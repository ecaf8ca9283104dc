/**
 * A schema per tenant (`settings.tenancy: 'schema'`, PostgreSQL): the metrics' gauges and
 * `countDeliveries()` read the tenants' schemas they are given (`{ tenants }` or
 * `{ schemas }`), since the outbox's own schema holds no tenant's events; without either
 * they refuse rather than report an empty outbox. Tenant schemas are named after the
 * file's own schema (`<t_…>_<tenant>`) and dropped afterwards.
 */
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { ConfigurationError, defineOutbox, event, type Outbox, receiver } from '../../src/index.js';
import { postgresTestSchema, type TestDatabase } from '../../testing/databases.js';
import { openOutbox, testClock } from '../relay/support.js';

/** The value of one sample of the exposition text (`name{labels} value`). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const rendered = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');
  const head = rendered ? `${name}{${rendered}} ` : `${name} `;
  const line = text.split('\n').find((l) => l.startsWith(head));
  if (line === undefined) throw new Error(`no sample ${head.trim()} in:\n${text}`);
  return Number(line.slice(head.length));
}

const config = defineOutbox({
  events: { 'shop.Placed': event({ schema: z.object({ n: z.number() }) }) },
  receivers: {
    'shop.log': receiver('shop.Placed', { handle: () => {} }),
    'shop.audit': receiver('shop.Placed', { handle: () => {} }),
  },
  settings: { tenancy: 'schema' },
});

describe.skipIf(!inject('pgAvailable'))(
  'tenants: metrics and counts per tenant schema [postgres]',
  () => {
    let db: TestDatabase;
    let base: string;
    let outbox: Outbox<typeof config>;
    const made = new Set<string>();
    const tenantSchema = (tenant: string) => {
      const schema = `${base}_${tenant}`;
      made.add(schema);
      return schema;
    };

    beforeAll(async () => {
      db = await postgresTestSchema();
      base = db.outboxOptions.schema!;
      outbox = await openOutbox(db, config, { tenantSchema, clock: testClock().now });
      await outbox.migrate({ schemas: [tenantSchema('acme'), tenantSchema('globex')] });
      // acme: 2 events → 4 owed deliveries; globex: 1 event → 2.
      await outbox.fire('shop.Placed', { n: 1 }, { tenant: 'acme' });
      await outbox.fire('shop.Placed', { n: 2 }, { tenant: 'acme' });
      await outbox.fire('shop.Placed', { n: 3 }, { tenant: 'globex' });
    });
    afterAll(async () => {
      await outbox.close();
      for (const schema of made)
        await db.sequelize.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
      await db.cleanup();
    });

    it('countDeliveries({ tenants }) and ({ schemas }) sum the tenants’ schemas', async () => {
      const both = await outbox.countDeliveries({ tenants: ['acme', 'globex'] });
      expect(both).toMatchObject({ pending: 6, succeeded: 0, dead: 0 });
      expect(await outbox.countDeliveries({ schemas: [tenantSchema('globex')] })).toMatchObject({
        pending: 2,
      });
      expect(await outbox.countDeliveries({ tenants: ['acme'] })).toMatchObject({ pending: 4 });
    });

    it('countDeliveries() without tenants or schemas refuses, naming the option', async () => {
      await expect(outbox.countDeliveries()).rejects.toThrow(ConfigurationError);
      await expect(outbox.countDeliveries()).rejects.toThrow(
        "countDeliveries() on an outbox with a schema per tenant (settings.tenancy: 'schema') needs the schemas it serves: countDeliveries({ schemas: ['acme', …] }) or countDeliveries({ tenants: […] })",
      );
      await expect(outbox.countDeliveries({ tenants: [] })).rejects.toThrow(
        'countDeliveries({ tenants }) must name at least one tenant',
      );
    });

    it('outbox.metrics({ tenants }) gauges one series per tenant schema, labelled schema', async () => {
      const registry = outbox.metrics(new Registry(), { tenants: ['acme', 'globex'] });
      const text = await registry.metrics();
      expect(sample(text, 'outbox_owed', { schema: tenantSchema('acme') })).toBe(4);
      expect(sample(text, 'outbox_owed', { schema: tenantSchema('globex') })).toBe(2);
      expect(sample(text, 'outbox_claimed', { schema: tenantSchema('acme') })).toBe(0);
      expect(sample(text, 'outbox_lapsed_leases', { schema: tenantSchema('globex') })).toBe(0);
      expect(sample(text, 'outbox_dead', { schema: tenantSchema('globex') })).toBe(0);
      // No unlabelled series of the outbox's own (empty) schema.
      expect(text).not.toMatch(/^outbox_owed /m);
    });

    it('outbox.metrics({ schemas }) reads the named schemas', async () => {
      const registry = outbox.metrics(new Registry(), { schemas: [tenantSchema('globex')] });
      const text = await registry.metrics();
      expect(sample(text, 'outbox_owed', { schema: tenantSchema('globex') })).toBe(2);
      expect(text).not.toContain(`schema="${tenantSchema('acme')}"`);
    });

    it('under a tenant column, { tenants } is refused (these reads do not narrow by the column)', async () => {
      const columnOutbox = await openOutbox(db, {
        ...config,
        settings: { ...config.settings, tenancy: 'column' },
      });
      try {
        await expect(columnOutbox.countDeliveries({ tenants: ['acme'] })).rejects.toThrow(
          'countDeliveries({ tenants }) reads a schema per tenant',
        );
        expect(() => columnOutbox.metrics(new Registry(), { tenants: ['acme'] })).toThrow(
          'leave tenants out',
        );
        expect(await columnOutbox.countDeliveries()).toMatchObject({ pending: 0 });
      } finally {
        await columnOutbox.close();
      }
    });

    it('outbox.metrics() without tenants or schemas refuses, naming the option', () => {
      expect(() => outbox.metrics(new Registry())).toThrow(ConfigurationError);
      expect(() => outbox.metrics(new Registry())).toThrow(
        "outbox.metrics({ schemas: ['acme', …] }) or outbox.metrics({ tenants: […] })",
      );
    });
  },
);
