/**
 * The harness is typed by the outbox's config, like `fire()`. These are compile-time checks
 * (`npm test` type-checks test/ with tsc): each `@ts-expect-error` fails the type-check if
 * the line under it ever compiles. The functions under test are never called here: the
 * outboxes below are declared, not made.
 */

import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import type { DeliveryStatus, EventColumnValue, Outbox } from '../../src/index.js';
import { defineOutbox, event } from '../../src/index.js';
import {
  type AssertFiredOptions,
  assertFired,
  type CapturedEnvelope,
  type CapturedTopicName,
  type DrainOptions,
  drainOutbox,
  type TestDatabase,
} from '../../testing/index.js';

const config = defineOutbox({
  events: {
    'shop.OrderPlaced': event({
      schema: z.object({ orderId: z.string(), placedAt: z.coerce.date(), totalCents: z.number() }),
    }),
    'shop.Refunded': event({
      schema: z.object({ orderId: z.string(), amountCents: z.string().transform(Number) }),
    }),
  },
});
declare const outbox: Outbox<typeof config>;
declare const untyped: Outbox;

type Placed = { orderId: string; placedAt: Date; totalCents: number };

describe('assertFired, typed by the outbox config', () => {
  it("returns the event's payloads as its schema outputs them", () => {
    expectTypeOf(() => assertFired(outbox, 'shop.OrderPlaced')).returns.resolves.toEqualTypeOf<
      Placed[]
    >();
    // The output type, not the input: a transform's result, a coerced Date.
    expectTypeOf(() => assertFired(outbox, 'shop.Refunded')).returns.resolves.toEqualTypeOf<
      { orderId: string; amountCents: number }[]
    >();
    expectTypeOf(assertFired<typeof config, 'shop.OrderPlaced'>)
      .parameter(1)
      .toEqualTypeOf<'shop.OrderPlaced'>();
  });

  it('accepts only declared event names', () => {
    expectTypeOf(assertFired<typeof config, 'shop.OrderPlaced'>)
      .parameter(1)
      .toExtend<'shop.OrderPlaced' | 'shop.Refunded'>();
    expectTypeOf(() =>
      // @ts-expect-error 'shop.OrderPlacd' is not a declared event name
      assertFired(outbox, 'shop.OrderPlacd'),
    ).toBeFunction();
    expectTypeOf(() =>
      // @ts-expect-error a name is a string literal of the config, not any string
      assertFired(outbox, String('shop.OrderPlaced')),
    ).toBeFunction();
  });

  it('a payload used as the wrong type does not compile', () => {
    const check = async () => {
      const [placed] = await assertFired(outbox, 'shop.OrderPlaced', { times: 1 });
      // @ts-expect-error placedAt is a Date (z.coerce.date()'s output), not the stored text
      const text: string = placed.placedAt;
      // @ts-expect-error the payload has no field the schema does not declare
      const total: number = placed.total;
      const [refund] = await assertFired(outbox, 'shop.Refunded');
      // @ts-expect-error amountCents is the transform's number, not the string fired
      const cents: string = refund.amountCents;
      return [text, total, cents];
    };
    expectTypeOf(check).toBeFunction();
  });

  it('an outbox typed only as Outbox takes any name and returns unknown payloads', () => {
    expectTypeOf(() => assertFired(untyped, 'any.Name')).returns.resolves.toEqualTypeOf<
      unknown[]
    >();
  });

  it('takes only the options it knows', () => {
    expectTypeOf<AssertFiredOptions>().toEqualTypeOf<{
      readonly times?: number;
      readonly columns?: Readonly<Record<string, EventColumnValue>>;
    }>();
    expectTypeOf(() =>
      // @ts-expect-error a misspelt option does not compile
      assertFired(outbox, 'shop.OrderPlaced', { time: 1 }),
    ).toBeFunction();
  });
});

describe('assertFired and captured topics', () => {
  // A row type as codegen writes it for a captured topic (EventPayloads['shop.order.inserted']).
  type OrderInsertedPayload = {
    model: string;
    operation: 'inserted' | 'updated' | 'deleted';
    pk: unknown;
    changed: string[] | null;
    before?: null;
    after?: { id: number; status: string } | null;
    occurred_at: string;
  };

  it("accepts a captured topic's name on a typed outbox, returning its envelopes", () => {
    expectTypeOf(() => assertFired(outbox, 'shop.order.inserted')).returns.resolves.toEqualTypeOf<
      CapturedEnvelope[]
    >();
    expectTypeOf<'shop.order.updated'>().toExtend<CapturedTopicName>();
    expectTypeOf<'shop.OrderPlaced'>().not.toExtend<CapturedTopicName>();
  });

  it("takes codegen's payload type of the topic, typing the row", () => {
    expectTypeOf(() =>
      assertFired<OrderInsertedPayload>(outbox, 'shop.order.inserted', { times: 1 }),
    ).returns.resolves.toEqualTypeOf<OrderInsertedPayload[]>();
    const check = async () => {
      const [inserted] = await assertFired<OrderInsertedPayload>(outbox, 'shop.order.inserted');
      const status: string | undefined = inserted.after?.status;
      // @ts-expect-error the row's status is a string
      const n: number | undefined = inserted.after?.status;
      return [status, n];
    };
    expectTypeOf(check).toBeFunction();
  });

  it('still refuses a name that is neither declared nor a captured topic', () => {
    expectTypeOf(() =>
      // @ts-expect-error not a declared event, and no capture operation ends it
      assertFired(outbox, 'shop.order.insertd'),
    ).toBeFunction();
  });
});

describe('drainOutbox and the test databases, typed', () => {
  it('drainOutbox takes any outbox and exactly its four options, and counts by status', () => {
    expectTypeOf(() => drainOutbox(outbox)).returns.resolves.toEqualTypeOf<
      Record<DeliveryStatus, number>
    >();
    expectTypeOf(() =>
      drainOutbox(untyped, { limit: 5, respectBackoff: true, now: new Date() }),
    ).returns.resolves.toEqualTypeOf<Record<DeliveryStatus, number>>();
    expectTypeOf<DrainOptions>().toEqualTypeOf<{
      readonly limit?: number;
      readonly respectBackoff?: boolean;
      readonly now?: Date;
      readonly lane?: string | null;
    }>();
    expectTypeOf(() =>
      // @ts-expect-error a misspelt option does not compile
      drainOutbox(outbox, { limt: 5 }),
    ).toBeFunction();
    expectTypeOf(() =>
      // @ts-expect-error now is a Date, not a timestamp
      drainOutbox(outbox, { now: Date.now() }),
    ).toBeFunction();
    expectTypeOf(() =>
      // @ts-expect-error respectBackoff is a boolean
      drainOutbox(outbox, { respectBackoff: 'yes' }),
    ).toBeFunction();
  });

  it('a test database has a URL for the app, and disposes of itself', () => {
    expectTypeOf<TestDatabase['url']>().toEqualTypeOf<string>();
    expectTypeOf<TestDatabase>().toExtend<AsyncDisposable>();
    expectTypeOf<TestDatabase['cleanup']>().toEqualTypeOf<() => Promise<void>>();
  });
});
