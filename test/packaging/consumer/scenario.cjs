// What a new app does first, against the installed tarball: declare, migrate, fire in a
// transaction, drain with outboxkit/testing, build the catalogue (z.toJSONSchema), and
// reach for LISTEN/NOTIFY without pg installed. Shared by the ESM and the CommonJS entry,
// which load the libraries each their own way and pass them in. Prints one JSON line.
const { join } = require('node:path');

/** @param {{ Sequelize: any, z: any, z3: any, outboxkit: any, testing: any, dir: string }} libs */
module.exports = async function scenario({ Sequelize, z, z3, outboxkit, testing, dir }) {
  const { buildCatalogue, createOutbox, defineOutbox, event, receiver, listenNotifyWakeup } =
    outboxkit;
  const sequelize = new Sequelize({
    dialect: 'sqlite',
    storage: join(dir, 'app.sqlite'),
    logging: false,
  });
  const seen = [];
  const OrderPlaced = event({
    schema: z.object({ orderId: z.string().describe('the order'), at: z.coerce.date() }),
  });
  const config = defineOutbox({
    events: { 'shop.OrderPlaced': OrderPlaced },
    receivers: {
      'mail.confirm': receiver(OrderPlaced, {
        handle: (e) => void seen.push(`${e.payload.orderId}@${e.payload.at instanceof Date}`),
      }),
      // After the COMMIT: exercises the wrap of Sequelize's commitTransaction.
      'audit.log': receiver(OrderPlaced, {
        mode: 'onCommit',
        handle: (e) => void seen.push(`committed ${e.payload.orderId}`),
      }),
    },
  });
  const configError = (events) => {
    try {
      defineOutbox({ events });
      return null;
    } catch (error) {
      return `${error.name}: ${error.message}`;
    }
  };
  const errors = {
    zod3: configError({ 'a.B': event({ schema: z3.object({ id: z3.string() }) }) }),
    version: configError({ 'a.B': event({ schema: z.object({}), version: 0 }) }),
  };
  const outbox = createOutbox(config, { sequelize, wakeup: null });
  try {
    await outbox.migrate();
    await sequelize.transaction((transaction) =>
      outbox.fire('shop.OrderPlaced', { orderId: 'o1', at: new Date() }, { transaction }),
    );
    const drained = await testing.drainOutbox(outbox);
    const fields = buildCatalogue(config).events[0].fields;
    let pgMissing;
    try {
      await listenNotifyWakeup({ connection: { host: '127.0.0.1' } }).listen(() => {});
      pgMissing = { error: null };
    } catch (error) {
      pgMissing = { name: error.name, code: error.code, message: error.message };
    }
    return { seen, succeeded: drained.succeeded, fields, pgMissing, errors };
  } finally {
    await outbox.close();
    await sequelize.close();
  }
};
