/**
 * The shop application: place and cancel orders, each change committing together with the
 * event that announces it. This is the code the README's tour quotes.
 */
import type { Sequelize } from 'sequelize';
import { shopConfig } from '../../outbox.config.js';
import {
  type CreateOutboxOptions,
  createOutbox,
  pgBossTaskBackend,
  pgBossTaskWorker,
  type TaskWorker,
} from '../../src/index.js';
import { provideShop, type ShopContext, type ShopOutbox } from './context.js';
import { defineShopModels, type Order, type OrderLine, type ShopModels } from './models.js';
import { installCapture } from './outbox.generated.js';
import { Analytics, Mailer, OrderHistory, PaymentProvider } from './services.js';

/** What the shop sells, in cents. */
export const PRICES: Readonly<Record<string, number>> = {
  mug: 1_200,
  tee: 2_500,
  poster: 900,
  'signed-print': 15_000,
  'grand-piano': 800_000,
};

/** Options of {@link createShop}. */
export interface ShopOptions {
  /** Passed on to `createOutbox` (a logger, a wakeup, a jitter). */
  readonly outbox?: Omit<CreateOutboxOptions, 'sequelize'>;
  readonly payments?: PaymentProvider;
  readonly mailer?: Mailer;
  readonly analytics?: Analytics;
  readonly history?: OrderHistory;
  /** Where the shop's own log lines go. @defaultValue `console.log` */
  readonly log?: (line: string) => void;
  /**
   * Route the confirmation mail through pg-boss (PostgreSQL only): the mail receiver is
   * declared `site: 'task'`, the relay hands each of its rows to `queue` of this started
   * PgBoss, and {@link Shop.startMailWorker} runs them. Without it (SQLite, the demo) the
   * relay sends the mail itself.
   */
  readonly mailQueue?: { readonly boss: unknown; readonly queue?: string };
}

/** A running shop. */
export interface Shop extends ShopContext {
  readonly sequelize: Sequelize;
  /** Create the outbox's tables and the shop's, and put stock on the shelves. */
  setUp(stock: Readonly<Record<string, number>>): Promise<void>;
  /**
   * Place an order and announce it, in one transaction. The inline `shop.reserveStock`
   * receiver runs inside `fire()`: if the shelf is short it throws, and the order, its
   * event and its deliveries all roll back.
   */
  placeOrder(order: { id: string; customerEmail: string; items: OrderLine[] }): Promise<Order>;
  /**
   * Cancel an order. The event's idempotency key makes a double-clicked Cancel announce
   * it once, so the stock is released once. Returns false for a repeat.
   */
  cancelOrder(orderId: string, reason: string): Promise<boolean>;
  /**
   * Run the pg-boss worker that sends the confirmation mail (with `mailQueue` only): each
   * job takes its row under the claim it carries and runs the mail as the relay would.
   */
  startMailWorker(): Promise<TaskWorker>;
  /** Release the outbox and unregister the shop (the caller closes Sequelize). */
  close(): Promise<void>;
}

/**
 * Start the shop on a Sequelize instance: define its models, create its outbox (over a
 * config of those models) with the captured `Order`'s hooks installed, and make both
 * available to the receivers (see `context.ts`).
 */
export function createShop(sequelize: Sequelize, options: ShopOptions = {}): Shop {
  const models: ShopModels = defineShopModels(sequelize);
  const mailQueue = options.mailQueue;
  if (mailQueue && sequelize.getDialect() !== 'postgres') {
    throw new Error(
      `createShop({ mailQueue }) routes mail through pg-boss, which needs PostgreSQL (got ${sequelize.getDialect()}); leave it out to send mail from the relay`,
    );
  }
  const queue = mailQueue?.queue ?? 'shop-mail';
  const outbox: ShopOutbox = createOutbox(
    shopConfig(models, { mailSite: mailQueue ? 'task' : 'relay' }),
    {
      ...options.outbox,
      sequelize,
      ...(mailQueue ? { taskBackend: pgBossTaskBackend(mailQueue.boss, { queue }) } : {}),
    },
  );
  // The hooks of the captured Order (generated: exactly the models the config captures).
  installCapture(outbox);
  const context: ShopContext = {
    models,
    outbox,
    payments: options.payments ?? new PaymentProvider(),
    mailer: options.mailer ?? new Mailer(),
    analytics: options.analytics ?? new Analytics(),
    history: options.history ?? new OrderHistory(),
    log: options.log ?? ((line) => console.log(line)),
  };
  const unregister = provideShop(context);

  return {
    ...context,
    sequelize,

    async setUp(stock) {
      await outbox.migrate();
      await sequelize.sync();
      await models.StockItem.bulkCreate(
        Object.entries(stock).map(([sku, quantity]) => ({ sku, quantity })),
      );
    },

    placeOrder: ({ id, customerEmail, items }) =>
      sequelize.transaction(async (transaction) => {
        const totalCents = items.reduce((sum, i) => sum + priceOf(i.sku) * i.quantity, 0);
        const order = await models.Order.create(
          { id, customerEmail, totalCents, items },
          { transaction },
        );
        await outbox.fire(
          'shop.OrderPlaced',
          { orderId: id, customerEmail, totalCents, items, placedAt: new Date() },
          { transaction, orderingKey: id },
        );
        return order;
      }),

    cancelOrder: (orderId, reason) =>
      sequelize.transaction(async (transaction) => {
        await models.Order.update({ status: 'cancelled' }, { where: { id: orderId }, transaction });
        const fired = await outbox.fire(
          'shop.OrderCancelled',
          { orderId, reason },
          { transaction, orderingKey: orderId, idempotencyKey: `cancel:${orderId}` },
        );
        return !fired.duplicate;
      }),

    async startMailWorker() {
      if (!mailQueue) throw new Error('startMailWorker() needs createShop({ mailQueue })');
      return pgBossTaskWorker(outbox, mailQueue.boss, { queue });
    },

    async close() {
      unregister();
      await outbox.close();
    },
  };
}

function priceOf(sku: string): number {
  const price = PRICES[sku];
  if (price === undefined) throw new Error(`unknown product ${JSON.stringify(sku)}`);
  return price;
}
