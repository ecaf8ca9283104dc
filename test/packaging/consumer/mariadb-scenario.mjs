// The "done means" on MariaDB, run inside the packed-install app (see
// test/packaging/mariadb-install.test.ts): the installed outboxkit on Sequelize and the
// driver the URL names (mariadb:// or mysql://). Prints one JSON line of what it saw.

import { capture, createOutbox, defineOutbox, event, installCapture, receiver } from 'outboxkit';
import { DataTypes, QueryTypes, Sequelize } from 'sequelize';
import { z } from 'zod';

const url = process.env.OUTBOX_URL;
const EVENTS = Number(process.env.EVENTS ?? 5000);
const KEYS = Number(process.env.KEYS ?? 200);
const RELAYS = 4;
const quiet = { debug() {}, info() {}, warn() {}, error: (m, f) => console.error(m, f?.error) };

const Ping = event({ schema: z.object({ k: z.string(), n: z.number() }) });
const calls = new Map();
/** Per key, the n of each delivery in the order the handlers ran. */
const seenByKey = new Map();
const config = (sequelize) =>
  defineOutbox({
    events: { 'app.Ping': Ping },
    capture: [capture(sequelize.models.Order, { app: 'shop' })],
    receivers: {
      'app.count': receiver(Ping, {
        handle: async (e) => {
          calls.set(e.id, (calls.get(e.id) ?? 0) + 1);
          const list = seenByKey.get(e.payload.k) ?? [];
          list.push(e.payload.n);
          seenByKey.set(e.payload.k, list);
        },
      }),
    },
  });

const open = () => {
  const sequelize = new Sequelize(url, { logging: false, pool: { max: 8 } });
  sequelize.define('Order', { status: DataTypes.STRING }, { tableName: 'orders' });
  return sequelize;
};
const instances = Array.from({ length: RELAYS }, open);
const outboxes = instances.map((s) =>
  createOutbox(config(s), { sequelize: s, logger: quiet, wakeup: null }),
);
const [main] = outboxes;
const out = {};

await main.migrate();
await instances[0].models.Order.sync();

// A fire in a transaction that rolls back leaves nothing.
await instances[0]
  .transaction(async (transaction) => {
    await main.fire('app.Ping', { k: 'k0', n: -1 }, { transaction, orderingKey: 'k0' });
    throw new Error('roll back');
  })
  .catch(() => {});
out.afterRollback = (await main.countDeliveries()).pending;

// 5,000 events on 200 keys, n rising per key, fired in batches.
const batch = [];
for (let i = 0; i < EVENTS; i++) {
  const k = `k${i % KEYS}`;
  batch.push({ name: 'app.Ping', payload: { k, n: Math.floor(i / KEYS) }, orderingKey: k });
}
const firedAt = Date.now();
for (let i = 0; i < batch.length; i += 500) await main.fireMany(batch.slice(i, i + 500));
out.fireMs = Date.now() - firedAt;

// Four relays, each on its own Sequelize (as four processes would be), until every event is in.
// Each pool is warmed first, so all four claim from the start: a relay still opening its
// first connection could otherwise find the queue drained by the others (a claim takes
// milliseconds), and "the queue was split" below would say nothing about claiming.
await Promise.all(outboxes.map((o) => o.countDeliveries()));
const stop = new AbortController();
const started = Date.now();
const running = outboxes.map((o, i) =>
  o.runRelay({ workerId: `relay-${i}`, signal: stop.signal, batchSize: 100, concurrency: 4 }),
);
while (calls.size < EVENTS && Date.now() - started < 240_000)
  await new Promise((r) => setTimeout(r, 100));
stop.abort();
const reports = await Promise.all(running);
out.relayMs = Date.now() - started;
out.delivered = calls.size;
out.duplicates = [...calls.values()].filter((n) => n !== 1).length;
out.perRelay = reports.map((r) => r.succeeded);
out.inversions = 0;
for (const list of seenByKey.values())
  for (let i = 1; i < list.length; i++) if (list[i] < list[i - 1]) out.inversions++;
out.counts = await main.countDeliveries();

// Change capture of a model's create, update and destroy.
installCapture(main, instances[0]);
const Order = instances[0].models.Order;
const order = await Order.create({ status: 'placed' });
await order.update({ status: 'paid' });
await order.destroy();
const rows = await instances[0].query(
  "SELECT name FROM outbox_events WHERE name LIKE 'shop.%' ORDER BY id",
  { type: QueryTypes.SELECT },
);
out.captured = rows.map((r) => r.name);

for (const o of outboxes) await o.close();
for (const s of instances) await s.close();
console.log(JSON.stringify(out));
