import { z } from 'zod';
import { event } from '../../src/index.js';

/** A customer placed an order. */
export const OrderPlaced = event({
  description: 'A customer placed an order; stock is reserved and payment is due.',
  schema: z.object({
    orderId: z.string(),
    customerEmail: z.email(),
    totalCents: z.number().int().nonnegative(),
    items: z.array(z.object({ sku: z.string(), quantity: z.number().int().positive() })).min(1),
    placedAt: z.coerce.date(),
  }),
});

/** An order was cancelled before it shipped. */
export const OrderCancelled = event({
  description: 'An order was cancelled before it shipped.',
  schema: z.object({ orderId: z.string(), reason: z.string() }),
});

/** The payment provider captured the money for an order. */
export const PaymentCaptured = event({
  description: 'The payment provider captured the money for an order.',
  schema: z.object({
    orderId: z.string(),
    amountCents: z.number().int().nonnegative(),
    provider: z.string(),
  }),
});
