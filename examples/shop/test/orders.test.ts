import { afterAll, beforeAll, expect, it } from 'vitest';
import { assertFired, drainOutbox } from '../../../testing/index.js';
import { Order, outbox, placeOrder, StockItem, sequelize } from './db.js';

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
  // capture, mail, analytics × 2, and the order's captured update (history, analytics)
  expect(counts).toMatchObject({ succeeded: 6, dead: 0 });
  const [captured] = await assertFired(outbox, 'payments.PaymentCaptured', { times: 1 });
  expect(captured.amountCents).toBe(2_400); // a number: the type comes from the event's schema
});

it('an order nobody pays for is cancelled 48 hours later, and its stock put back', async () => {
  const HOUR = 3_600_000;
  // over the card limit: the capture is declined (a dead letter), so the order stays unpaid
  await StockItem.create({ sku: 'grand-piano', quantity: 1 });
  await placeOrder({
    id: 'o-unpaid',
    customerEmail: 'bob@mail.example',
    items: [{ sku: 'grand-piano', quantity: 1 }],
  });
  await drainOutbox(outbox); // the capture runs now, the expiry is not due yet
  expect((await Order.findByPk('o-unpaid'))?.status).toBe('placed');

  // drainOutbox({ now }) moves the test to the due time; nothing earlier is skipped
  await drainOutbox(outbox, { now: new Date(Date.now() + 48 * HOUR + 60_000) });
  expect((await Order.findByPk('o-unpaid'))?.status).toBe('cancelled');
  await assertFired(outbox, 'shop.OrderCancelled', { times: 1 });
  expect((await StockItem.findByPk('grand-piano'))?.quantity).toBe(1);
});
