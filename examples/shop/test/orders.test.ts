import { afterAll, beforeAll, expect, it } from 'vitest';
import { assertFired, drainOutbox } from '../../../testing/index.js';
import { outbox, placeOrder, StockItem, sequelize } from './db.js';

beforeAll(async () => {
  await outbox.migrate();
  await sequelize.sync();
  await StockItem.create({ sku: 'mug', quantity: 10 });
});
afterAll(async () => {
  await outbox.close();
  await sequelize.close();
});

it('a placed order is paid once, and the payment announced', async () => {
  await placeOrder({
    id: 'o-1',
    customerEmail: 'ann@mail.example',
    items: [{ sku: 'mug', quantity: 2 }],
  });
  const counts = await drainOutbox(outbox); // the relay's own path, without its waits
  expect(counts).toMatchObject({ succeeded: 4, dead: 0 });
  const [captured] = await assertFired(outbox, 'payments.PaymentCaptured', { times: 1 });
  expect(captured.amountCents).toBe(2_400); // a number: the type comes from the event's schema
});
