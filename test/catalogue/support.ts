import { z } from 'zod';
import { AnyEvent, defineOutbox, event, receiver } from '../../src/index.js';

const noop = async () => {};

/** A small config: two events, receivers by definition and by name, one wildcard. */
export function shopConfig() {
  const OrderPlaced = event({
    description: 'A customer placed an order.',
    schema: z.object({
      orderId: z.string(),
      items: z.array(z.object({ sku: z.string(), quantity: z.number().int() })),
      coupon: z.string().optional(),
    }),
  });
  const OrderCancelled = event({
    retention: { days: 2 },
    schema: z.object({ orderId: z.string(), reason: z.string().default('unknown') }),
  });
  return defineOutbox({
    // Declared out of order on purpose: the catalogue sorts.
    events: { 'shop.OrderPlaced': OrderPlaced, 'shop.OrderCancelled': OrderCancelled },
    receivers: {
      'stock.reserve': receiver(OrderPlaced, { mode: 'inline', handle: noop }),
      'mail.confirm': receiver('shop.OrderPlaced', { handle: noop, maxAttempts: 3 }),
      'stock.release': receiver(OrderCancelled, { handle: noop, leaseSeconds: 90 }),
      'zz.bridge': receiver(AnyEvent, { deliver: noop, backoff: { baseSeconds: 5 } }),
      'aa.audit': receiver(AnyEvent, { handle: noop, mode: 'onCommit' }),
    },
  });
}
