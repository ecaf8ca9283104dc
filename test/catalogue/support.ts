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

/**
 * Every option the catalogue publishes about timing and fan-out, at runtime (functions
 * named, so the runtime catalogue can say which): lanes, eager, due by delay and by
 * function, targets, giveUpAfter, and two topic-pattern wildcards beside an AnyEvent one.
 */
export function timingConfig() {
  const OfferMade = event({
    version: 2,
    upgrade: (payload) => payload,
    schema: z.object({
      offerId: z.string(),
      tenants: z.array(z.string()),
      expiresAt: z.coerce.date(),
    }),
  });
  const BookAdded = event({ schema: z.object({ isbn: z.string() }) });
  function tenantsOf(e: { payload: { tenants: string[] } }) {
    return e.payload.tenants;
  }
  function expiryOf(e: { payload: { expiresAt: Date } }) {
    return e.payload.expiresAt;
  }
  return defineOutbox({
    events: { 'offers.OfferMade': OfferMade, 'library.BookAdded': BookAdded },
    receivers: {
      'offers.fanOut': receiver(OfferMade, {
        deliver: noop,
        targets: tenantsOf,
        lane: 'webhooks',
        giveUpAfter: { hours: 6 },
        backoff: { baseSeconds: 2, capSeconds: 300 },
        leaseSeconds: 45,
      }),
      'offers.expire': receiver(OfferMade, { handle: noop, due: expiryOf, lane: 'slow' }),
      'offers.remind': receiver(OfferMade, { handle: noop, due: { hours: 48 } }),
      'offers.notify': receiver(OfferMade, { handle: noop, eager: true }),
      'library.index': receiver('library.*', { handle: noop, targets: () => ['search'] }),
      'library.audit': receiver('library.*', { handle: noop, mode: 'onCommit' }),
      'offers.log': receiver('offers.*', { handle: noop }),
      'all.bridge': receiver(AnyEvent, { deliver: noop }),
    },
  });
}
