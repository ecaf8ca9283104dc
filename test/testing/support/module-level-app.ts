import { QueryTypes } from 'sequelize';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it, vi } from 'vitest';
import type { TestDatabase } from '../../../testing/databases.js';
import { assertFired, drainOutbox } from '../../../testing/index.js';
import { type DialectCase, dialectAvailable } from '../../support/dialects.js';

type App = typeof import('../../fixtures/harness/app.js');

/** The tables of a test database, read through the helper's own connection. */
export async function tablesOf(db: TestDatabase): Promise<string[]> {
  const rows =
    db.dialect === 'mariadb' || db.dialect === 'mysql'
      ? await db.sequelize.query<{ name: string }>(
          'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()',
          { type: QueryTypes.SELECT },
        )
      : db.dialect === 'postgres'
        ? await db.sequelize.query<{ name: string }>(
            'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = :schema',
            { replacements: { schema: db.outboxOptions.schema }, type: QueryTypes.SELECT },
          )
        : await db.sequelize.query<{ name: string }>(
            "SELECT name FROM sqlite_master WHERE type = 'table'",
            { type: QueryTypes.SELECT },
          );
  return rows.map((r) => r.name).sort();
}

/**
 * The README's pattern on one dialect, declared by one test file per dialect (each file has
 * a module registry of its own, so the app's module-level Sequelize is made once per file,
 * from the URL set just before): the setup file's lines run in `beforeAll`, then the app is
 * imported for the first time.
 */
export function moduleLevelAppSuite(dialect: DialectCase): void {
  const skip = !dialectAvailable(dialect.name);
  describe.skipIf(skip)(
    `an app with module-level models, pointed at a test database by DATABASE_URL [${dialect.name}]`,
    () => {
      let db: TestDatabase;
      let app: App;
      beforeAll(async () => {
        db = await dialect.open();
        vi.stubEnv('DATABASE_URL', db.url);
        app = await import('../../fixtures/harness/app.js');
        await app.outbox.migrate();
        await app.sequelize.sync();
      });
      afterAll(async () => {
        vi.unstubAllEnvs();
        await app?.sequelize.close();
        await db?.cleanup();
      });

      it('its models find their tables, and the tables are in the test database', async () => {
        await app.Order.create({ id: 'o-0' });
        expect(await app.Order.count()).toBe(1);
        expect(await tablesOf(db)).toEqual(
          expect.arrayContaining(['orders', 'outbox_deliveries', 'outbox_events', 'shipments']),
        );
      });

      it('an order placed through the app is delivered by drainOutbox and read back by assertFired', async () => {
        const placedAt = new Date('2031-05-06T07:08:09.010Z');
        await app.placeOrder('o-1', placedAt);
        expect(await drainOutbox(app.outbox)).toMatchObject({ succeeded: 1, failed: 0, dead: 0 });
        expect(await app.Shipment.findByPk('o-1')).not.toBeNull();
        const [placed] = await assertFired(app.outbox, 'orders.OrderPlaced', { times: 1 });
        expectTypeOf(placed).toEqualTypeOf<{ orderId: string; placedAt: Date }>();
        expect(placed).toEqual({ orderId: 'o-1', placedAt });
      });
    },
  );
}
