/**
 * How receivers reach the running shop: its models, its outbox and its services.
 *
 * Receivers are declared in `outbox.config.ts`, before any database exists, so they cannot
 * be handed the app's objects. The app registers them here when it starts (`createShop`)
 * and a receiver asks for them when it runs. In your app this is your dependency-injection
 * container or your module singletons; what matters is that the receivers module imports
 * the config's *type* only, so a handler that fires events closes no import cycle.
 */
import type shopConfig from '../../outbox.config.js';
import type { Outbox } from '../../src/index.js';
import type { ShopModels } from './models.js';
import type { Analytics, Mailer, OrderHistory, PaymentProvider } from './services.js';

/** The shop's outbox, typed by its config: `fire('payments.PaymentCaptured', …)` is checked. */
export type ShopOutbox = Outbox<typeof shopConfig>;

/** What a running shop offers its receivers. */
export interface ShopContext {
  readonly models: ShopModels;
  readonly outbox: ShopOutbox;
  readonly payments: PaymentProvider;
  readonly mailer: Mailer;
  readonly analytics: Analytics;
  /** Each status change of an order, from the captured `shop.order.updated`. */
  readonly history: OrderHistory;
  /** Where the shop writes its log lines. */
  readonly log: (line: string) => void;
}

let running: ShopContext | undefined;

/** Make `context` the running shop; returns a function that unregisters it. */
export function provideShop(context: ShopContext): () => void {
  running = context;
  return () => {
    if (running === context) running = undefined;
  };
}

/** The running shop, for receivers. Throws when no shop was started in this process. */
export function shop(): ShopContext {
  if (!running) {
    throw new Error(
      'the shop is not running in this process: start it with createShop(sequelize) before a relay delivers its events',
    );
  }
  return running;
}
