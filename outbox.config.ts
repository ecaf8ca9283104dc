/**
 * The repo's own outbox: a small shop (orders, payments, mail). The demo (`npx outbox
 * demo`), the README's tour and the committed catalogue all use it. The app that fires
 * these events is `examples/shop/app.ts`; what each receiver does is in
 * `examples/shop/receivers.ts`. Your project's `outbox.config.ts` looks like this,
 * importing from 'outboxkit'.
 *
 * It also captures the `Order` model: every ORM write that updates an order row writes a
 * `shop.order.updated` event (its before and after images) in the write's own transaction.
 */
import { Sequelize } from 'sequelize';
import { OrderCancelled, OrderPlaced, PaymentCaptured } from './examples/shop/events.js';
import { defineShopModels, type ShopModels } from './examples/shop/models.js';
import {
  capturePayment,
  expireUnpaidOrder,
  forwardToAnalytics,
  logOrderPlaced,
  recordStatusChange,
  releaseStock,
  reserveStock,
  sendOrderConfirmation,
} from './examples/shop/receivers.js';
import { AnyEvent, capture, defineOutbox, receiver } from './src/index.js';

/**
 * The shop's config over its models. A function of them because `capture(Model)` names a
 * model class, which Sequelize binds to one instance (its hooks, the transaction around
 * each of its writes), and the shop runs on several in one process — its tests use SQLite
 * and PostgreSQL — so `createShop` makes one config per database. In an app with one
 * Sequelize, `capture(Order, …)` goes straight into `export default defineOutbox({ … })`.
 */
export function shopConfig(
  models: Pick<ShopModels, 'Order'>,
  options: {
    /**
     * Where the confirmation mail (a slow receiver: an SMTP round trip) runs: in the relay,
     * or handed to a task queue (`'task'`: the shop on PostgreSQL routes it through pg-boss,
     * see `createShop({ mailQueue })`). The committed catalogue is the relay's.
     */
    mailSite?: 'relay' | 'task';
  } = {},
) {
  return defineOutbox({
    events: {
      'shop.OrderPlaced': OrderPlaced,
      'shop.OrderCancelled': OrderCancelled,
      'payments.PaymentCaptured': PaymentCaptured,
    },
    receivers: {
      // Inside the order's own transaction: no stock, no order.
      'shop.reserveStock': receiver(OrderPlaced, { mode: 'inline', handle: reserveStock }),
      // After commit, best effort: a log line nobody retries.
      'shop.logOrderPlaced': receiver(OrderPlaced, { mode: 'onCommit', handle: logOrderPlaced }),
      // Durable (the default): at least once, retried with backoff, in order per order id.
      // A declined card raises PermanentFailure: a dead letter at once, no retries.
      'payments.capture': receiver(OrderPlaced, { handle: capturePayment, maxAttempts: 4 }),
      // The mail may run in a task queue's worker instead (pg-boss on PostgreSQL): the
      // relay then hands each claimed row off, and the row still owns retries.
      'mail.orderConfirmation': receiver(PaymentCaptured, {
        handle: sendOrderConfirmation,
        site: options.mailSite ?? 'relay',
      }),
      'shop.releaseStock': receiver(OrderCancelled, { handle: releaseStock }),
      // A captured topic: the Order row's before and after, typed from the model by codegen.
      'shop.orderHistory': receiver('shop.order.updated', { handle: recordStatusChange }),
      // Scheduled: written with the order, due 48 hours after it was placed.
      'shop.expireUnpaidOrder': receiver(OrderPlaced, {
        handle: expireUnpaidOrder,
        due: { hours: 48 },
      }),
      // A transport for every event (AnyEvent): what a Kafka or webhook bridge looks like.
      'analytics.forward': receiver(AnyEvent, {
        deliver: forwardToAnalytics,
        backoff: { baseSeconds: 5 },
      }),
    },
    // Every update of an order row (paid, cancelled) writes shop.order.updated, in its
    // write's own transaction, with the row as it was and as it is.
    capture: [
      capture(models.Order, { app: 'shop', operations: ['updated'], payload: 'beforeAndAfter' }),
    ],
    settings: { batchSize: 100 },
  });
}

/**
 * The config codegen, the catalogue and `npx outbox` read: over the shop's models defined
 * on an in-memory SQLite nothing ever connects to (a model needs a Sequelize to have its
 * attributes; these rows are never written).
 */
export default shopConfig(
  defineShopModels(new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false })),
);
