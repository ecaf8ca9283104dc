/**
 * The repo's own outbox: a small shop (orders, payments, mail). The demo (`npx outbox
 * demo`), the README's tour and the committed catalogue all use it. The app that fires
 * these events is `examples/shop/app.ts`; what each receiver does is in
 * `examples/shop/receivers.ts`. Your project's `outbox.config.ts` looks like this,
 * importing from 'outboxkit'.
 */
import { OrderCancelled, OrderPlaced, PaymentCaptured } from './examples/shop/events.js';
import {
  capturePayment,
  expireUnpaidOrder,
  forwardToAnalytics,
  logOrderPlaced,
  releaseStock,
  reserveStock,
  sendOrderConfirmation,
} from './examples/shop/receivers.js';
import { AnyEvent, defineOutbox, receiver } from './src/index.js';

export default defineOutbox({
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
    'mail.orderConfirmation': receiver(PaymentCaptured, { handle: sendOrderConfirmation }),
    'shop.releaseStock': receiver(OrderCancelled, { handle: releaseStock }),
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
  settings: { batchSize: 100 },
});
