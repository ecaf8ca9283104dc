/**
 * The shop's receivers: what happens when an order is placed, paid or cancelled.
 *
 * Each one shows a mode (see `outbox.config.ts` for how they are declared):
 * - `reserveStock` runs *inline*, inside the order's transaction: no stock, no order.
 * - `logOrderPlaced` runs *onCommit*: after the commit, best effort, never retried.
 * - `capturePayment`, `sendOrderConfirmation` and `releaseStock` are *durable* handlers:
 *   the relay runs them in a transaction that also records their acknowledgement, so the
 *   rows they write commit exactly when the delivery is marked done.
 * - `expireUnpaidOrder` is a *scheduled* durable handler (`due: { hours: 48 }`): its row is
 *   written with the order and comes due two days later.
 * - `forwardToAnalytics` is a *transport*: it sends outside any transaction.
 * - `recordStatusChange` is a durable handler of a *captured* topic, `shop.order.updated`:
 *   change capture writes it whenever an order row is updated, its payload the row before
 *   and after, typed from the `Order` model by codegen (`OrderUpdatedEvent`).
 */
import type { Transaction } from 'sequelize';
import {
  type DeliveryContext,
  type OutboxEvent,
  type PayloadOf,
  PermanentFailure,
} from '../../src/index.js';
import { shop } from './context.js';
import type { OrderCancelled, OrderPlaced, PaymentCaptured } from './events.js';
import type { OrderUpdatedEvent } from './outbox.generated.js';
import { CardDeclined, formatCents } from './services.js';

type Placed = OutboxEvent<PayloadOf<typeof OrderPlaced>>;
type Cancelled = OutboxEvent<PayloadOf<typeof OrderCancelled>>;
type Captured = OutboxEvent<PayloadOf<typeof PaymentCaptured>>;

/** An order asked for more than the shelf holds. Thrown inline, it rolls the order back. */
export class OutOfStock extends Error {
  constructor(sku: string, wanted: number, available: number) {
    super(`out of stock: ${wanted} × ${sku} wanted, ${available} available`);
    this.name = 'OutOfStock';
  }
}

/** Inline and durable handlers get a transaction; a missing one is a declaration mistake. */
function transactionOf(context: DeliveryContext): Transaction {
  if (!context.transaction) {
    throw new Error(`${context.receiverKey} needs a transaction: declare it inline or durable`);
  }
  return context.transaction;
}

/** Inline: take the order's items off the shelf, in the order's own transaction. */
export async function reserveStock(event: Placed, context: DeliveryContext): Promise<void> {
  const { StockItem } = shop().models;
  const transaction = transactionOf(context);
  for (const { sku, quantity } of event.payload.items) {
    // `lock` is SELECT … FOR UPDATE on PostgreSQL: two orders cannot both take the last one.
    const stock = await StockItem.findByPk(sku, { transaction, lock: true });
    if (!stock || stock.quantity < quantity) {
      throw new OutOfStock(sku, quantity, stock?.quantity ?? 0);
    }
    await stock.decrement('quantity', { by: quantity, transaction });
  }
}

/** onCommit: a log line once the order is committed. Nothing retries it if it throws. */
export async function logOrderPlaced(event: Placed): Promise<void> {
  const { orderId, items, totalCents } = event.payload;
  shop().log(`order ${orderId} placed: ${items.length} line(s), ${formatCents(totalCents)}`);
}

/**
 * Durable: charge the card, record the payment and announce it, all in the delivery's
 * transaction. The new event is fired with `{ transaction: context.transaction }`, so it
 * exists if and only if this delivery is recorded done.
 *
 * A declined card is a {@link PermanentFailure}: retrying cannot help, so the relay
 * dead-letters the delivery at once instead of spending the rest of its attempts.
 */
export async function capturePayment(event: Placed, context: DeliveryContext): Promise<void> {
  const { models, outbox, payments } = shop();
  const transaction = transactionOf(context);
  const { orderId, totalCents } = event.payload;
  const order = await models.Order.findByPk(orderId, { transaction });
  if (!order || order.status === 'cancelled') return; // nothing to charge any more

  let reference: string;
  try {
    // The event id is the charge's idempotency key: a retried capture charges once.
    reference = await payments.charge({
      orderId,
      amountCents: totalCents,
      idempotencyKey: event.id,
    });
  } catch (error) {
    if (error instanceof CardDeclined) {
      throw new PermanentFailure('card declined', { cause: error });
    }
    throw error; // anything else (a timeout, a 503) is retried with backoff
  }
  await models.Payment.create(
    { orderId, amountCents: totalCents, provider: payments.name, reference },
    { transaction },
  );
  await order.update({ status: 'paid' }, { transaction });
  await outbox.fire(
    'payments.PaymentCaptured',
    { orderId, amountCents: totalCents, provider: payments.name },
    { transaction, orderingKey: orderId },
  );
}

/**
 * Durable: mail the customer once the money is in. The mail server may refuse for a
 * moment (a thrown error: the relay retries with backoff). The event id is the mail's
 * Message-ID, so a send repeated after a crash is dropped as a duplicate downstream.
 */
export async function sendOrderConfirmation(
  event: Captured,
  context: DeliveryContext,
): Promise<void> {
  const { models, mailer } = shop();
  const transaction = transactionOf(context);
  const { orderId, amountCents } = event.payload;
  const order = await models.Order.findByPk(orderId, { transaction, rejectOnEmpty: true });
  const mail = {
    messageId: event.id,
    to: order.customerEmail,
    subject: `Order ${orderId} confirmed: ${formatCents(amountCents)} received`,
  };
  await mailer.send(mail);
  await models.SentMail.create({ orderId, to: mail.to, subject: mail.subject }, { transaction });
}

/** Durable: put a cancelled order's items back on the shelf. */
export async function releaseStock(event: Cancelled, context: DeliveryContext): Promise<void> {
  const { models } = shop();
  const transaction = transactionOf(context);
  const order = await models.Order.findByPk(event.payload.orderId, {
    transaction,
    rejectOnEmpty: true,
  });
  for (const { sku, quantity } of order.items) {
    await models.StockItem.increment('quantity', { by: quantity, where: { sku }, transaction });
  }
}

/**
 * Durable and scheduled (`due: { hours: 48 }` counted from the order's `occurredAt`):
 * cancel an order nobody paid for in two days, which puts its stock back through
 * `shop.releaseStock`. Its row was written with the order, so the expiry exists if and only
 * if the order does. An order paid (or cancelled) meanwhile is left alone: the receiver
 * re-reads current state when it comes due, as a scheduled reaction must. The cancellation
 * shares `cancelOrder`'s idempotency key, so a customer's cancel and the expiry announce it
 * once between them.
 */
export async function expireUnpaidOrder(event: Placed, context: DeliveryContext): Promise<void> {
  const { models, outbox } = shop();
  const transaction = transactionOf(context);
  const { orderId } = event.payload;
  const order = await models.Order.findByPk(orderId, { transaction, lock: true });
  if (order?.status !== 'placed') return;
  await order.update({ status: 'cancelled' }, { transaction });
  await outbox.fire(
    'shop.OrderCancelled',
    { orderId, reason: 'unpaid after 48 hours' },
    { transaction, orderingKey: orderId, idempotencyKey: `cancel:${orderId}` },
  );
}

/**
 * Durable, of the captured `shop.order.updated`: record an order's status change. Nobody
 * fires this event by hand — every update of an order row writes it, in the update's own
 * transaction (`capturePayment`'s `order.update`, `cancelOrder`'s `Order.update`) — so
 * the history cannot miss a change the code forgot to announce. `before` and `after` are
 * typed from the model: `status` is `'placed' | 'paid' | 'cancelled'`.
 */
export async function recordStatusChange(event: OrderUpdatedEvent): Promise<void> {
  const { before, after } = event.payload;
  if (before.status === after.status) return; // another attribute changed, or a repeat
  shop().history.record({ orderId: after.id, from: before.status, to: after.status });
}

/** A transport for every event (`AnyEvent`): what a Kafka or webhook bridge looks like. */
export async function forwardToAnalytics(event: OutboxEvent): Promise<void> {
  await shop().analytics.track(event);
}
