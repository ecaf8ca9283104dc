import PgBoss from 'pg-boss';
import { Sequelize } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createShop, type Shop } from '../../examples/shop/app.js';
import { Mailer } from '../../examples/shop/services.js';
import { silentLogger } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { postgresUrl } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { describePostgres, waitFor } from '../relay/support.js';

describePostgres(
  'the shop on PostgreSQL sends its confirmation mail through pg-boss',
  (dialect) => {
    let db: TestDatabase;
    let sequelize: Sequelize;
    let boss: PgBoss;
    let shop: Shop;
    const mailer = new Mailer();
    beforeAll(async () => {
      db = await dialect.open();
      sequelize = new Sequelize(db.url, { logging: false });
      boss = new PgBoss({
        connectionString: postgresUrl(),
        schema: db.outboxOptions.schema!,
        max: 4,
        supervise: false,
        schedule: false,
      });
      boss.on('error', () => {});
      await boss.start();
      shop = createShop(sequelize, {
        outbox: { logger: silentLogger, wakeup: null },
        mailer,
        log: () => {},
        mailQueue: { boss },
      });
      await shop.setUp({ mug: 10 });
    });
    afterAll(async () => {
      await shop?.close();
      await boss?.stop({ graceful: false, close: true, wait: true });
      await sequelize?.close();
      await db?.cleanup();
    });

    it('the relay hands the mail to pg-boss and the mail worker sends it, once', async () => {
      const worker = await shop.startMailWorker();
      try {
        expect(
          shop.outbox.catalogue().events.find((e) => e.name === 'payments.PaymentCaptured')
            ?.receivers[0],
        ).toMatchObject({ key: 'mail.orderConfirmation', site: 'task' });
        await shop.placeOrder({
          id: 'o-1',
          customerEmail: 'ann@mail.example',
          items: [{ sku: 'mug', quantity: 1 }],
        });
        // The capture, then (its event fired) the mail hand-off: the drain counts no task row.
        await drainOutbox(shop.outbox);
        await waitFor(() => mailer.sent.length === 1, 'the mail worker to send the confirmation');
        expect(mailer.sent[0]).toMatchObject({ to: 'ann@mail.example' });
        // The mail is sent inside the task, before the worker records its outcome: wait for
        // the record, then nothing is owed.
        const mailRows = async () =>
          (await shop.outbox.health()).receivers.filter(
            (r) => r.receiverKey === 'mail.orderConfirmation',
          );
        await waitFor(async () => (await mailRows()).length === 0, 'the worker to record the mail');
        expect(await mailRows()).toEqual([]); // nothing owed: the worker recorded it
        expect(await shop.models.SentMail.count()).toBe(1);
      } finally {
        await worker.stop();
      }
    }, 30_000);

    it('is refused on SQLite, where there is no pg-boss', () => {
      const sqlite = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false });
      expect(() => createShop(sqlite, { mailQueue: { boss } })).toThrow(
        /needs PostgreSQL \(got sqlite\)/,
      );
    });
  },
);
