import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, PayloadDecodeError } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { assertFired, OutboxAssertionError } from '../../testing/index.js';
import { freshPrefix, openOutbox } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

/** The same event, before and after its schema grew a required field without a version bump. */
const before = defineOutbox({
  events: { 'shop.Paid': event({ schema: z.object({ orderId: z.string() }) }) },
});
const after = defineOutbox({
  events: {
    'shop.Paid': event({ schema: z.object({ orderId: z.string(), currency: z.string() }) }),
  },
});

describeEachDialect(
  'a stored event that no longer decodes fails the same way everywhere',
  (dialect) => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await dialect.open();
    });
    afterAll(async () => {
      await db.cleanup();
    });

    it("fire()'s idempotent re-read raises the one decoder's PayloadDecodeError, naming event, version and path", async () => {
      const tablePrefix = freshPrefix();
      const old = await openOutbox(db, before, { tablePrefix });
      const current = await openOutbox(db, after, { tablePrefix });
      try {
        await old.fire('shop.Paid', { orderId: 'o1' }, { idempotencyKey: 'paid:o1' });
        const error = await current
          .fire('shop.Paid', { orderId: 'o1', currency: 'EUR' }, { idempotencyKey: 'paid:o1' })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(PayloadDecodeError);
        expect(error).toMatchObject({
          code: 'OUTBOX_PAYLOAD_DECODE',
          eventName: 'shop.Paid',
          version: 1,
          path: 'payload.currency',
        });
        // It is a read, not a write: a following fire in the same transaction still works.
        await db.sequelize.transaction(async (transaction) => {
          await current
            .fire(
              'shop.Paid',
              { orderId: 'o1', currency: 'EUR' },
              { idempotencyKey: 'paid:o1', transaction },
            )
            .catch(() => {});
          await current.fire('shop.Paid', { orderId: 'o2', currency: 'EUR' }, { transaction });
        });

        // assertFired decodes through the same decoder, and says so.
        const failure = await assertFired(current, 'shop.Paid').catch((e: unknown) => e);
        expect(failure).toBeInstanceOf(OutboxAssertionError);
        expect((failure as Error).message).toMatch(
          /does not decode: .*no longer decodes: currency/,
        );
        expect((failure as Error).cause).toBeInstanceOf(PayloadDecodeError);
      } finally {
        await old.close();
        await current.close();
      }
    });
  },
);
