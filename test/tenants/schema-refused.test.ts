/**
 * A schema per tenant only where schemas exist: on SQLite and MariaDB (no `schemas`
 * capability), `settings.tenancy: 'schema'`, `runRelay({ schemas })`, `deliverPending({
 * schemas })` and `migrate({ schemas })` are refused with a ConfigurationError naming the
 * database and what to use instead (the tenant column).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  createOutbox,
  defineOutbox,
  event,
  receiver,
} from '../../src/index.js';
import { dialectOf } from '../../src/storage/dialects.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const events = { 'shop.Placed': event({ schema: z.object({ n: z.number() }) }) };

describeEachDialect('tenants: a schema per tenant is refused without schemas', (dialect) => {
  let db: TestDatabase;
  let title: string;
  beforeAll(async () => {
    db = await dialect.open();
    title = dialectOf(db.sequelize, { who: 'test' }).title;
  });
  afterAll(() => db.cleanup());

  if (dialect.name === 'postgres') {
    it('PostgreSQL has schemas: the capability the refusal reads, so tenancy: schema is accepted', () => {
      expect(dialectOf(db.sequelize, { who: 'test' }).capabilities.schemas).toBe(true);
      const config = defineOutbox({ events, settings: { tenancy: 'schema' } });
      expect(() => createOutbox(config, { sequelize: db.sequelize, wakeup: null })).not.toThrow();
    });
    it('a receiver of site: task is refused under a schema per tenant, naming it', () => {
      const config = defineOutbox({
        events,
        receivers: {
          'shop.task': receiver('shop.Placed', { handle: () => {}, site: 'task' }),
        },
        settings: { tenancy: 'schema' },
      });
      expect(() =>
        createOutbox(config, {
          sequelize: db.sequelize,
          wakeup: null,
          taskBackend: { name: 'none', enqueue: async () => {}, close: async () => {} },
        }),
      ).toThrow(
        `receivers["shop.task"] declares site: 'task', which a schema per tenant (settings.tenancy: 'schema') does not serve yet`,
      );
    });
    return;
  }

  it('settings.tenancy: schema is refused at createOutbox, naming the database and the tenant column', () => {
    const config = defineOutbox({ events, settings: { tenancy: 'schema' } });
    const make = () => createOutbox(config, { sequelize: db.sequelize, wakeup: null });
    expect(make).toThrow(ConfigurationError);
    expect(make).toThrow(
      `settings.tenancy: 'schema' keeps each tenant's outbox in a schema of its own, which ${title} does not have (schemas are PostgreSQL's); declare settings: { tenancy: 'column' } instead: one set of tables, each event naming its tenant`,
    );
  });

  it('runRelay({ schemas }), deliverPending({ schemas }) and migrate({ schemas }) are refused, naming the tenant column', async () => {
    const outbox = await openOutbox(db, defineOutbox({ events, settings: { tenancy: 'column' } }));
    const refusal = (where: string) =>
      `${where}({ schemas }) serves a schema per tenant, which ${title} does not have; keep tenants apart by the tenant column instead (settings: { tenancy: 'column' }, runRelay({ tenants }))`;
    await expect(outbox.runRelay({ schemas: ['acme'], untilIdle: true })).rejects.toThrow(
      refusal('runRelay'),
    );
    await expect(outbox.deliverPending({ schemas: ['acme'] })).rejects.toThrow(
      refusal('deliverPending'),
    );
    await expect(outbox.migrate({ schemas: ['acme'] })).rejects.toThrow(refusal('migrate'));
    await outbox.close();
  });
});
