import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type {
  DeliveryItem,
  DeliveryResult,
  OutboxDelivery,
  OutboxEvent,
} from '../../src/declare/types.js';
import {
  ConfigurationError,
  DeliveryError,
  defineOutbox,
  event,
  RetryAfter,
  receiver,
  topicRouter,
  webhook,
} from '../../src/index.js';
import {
  conformanceEvent,
  conformanceItems,
  transportConformance,
} from '../../testing/conformance/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { openOutbox, rowsOf } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import { startWebhookServer } from './support/webhook-server.js';

const never = new AbortController().signal;

/** A destination that records each call's items and answers `answer(event)` per item. */
function recorder(
  name: string,
  answer: (e: OutboxEvent) => DeliveryResult = () => ({ status: 'sent' }),
) {
  const calls: string[][] = [];
  let closes = 0;
  const transport: OutboxDelivery = {
    name,
    async deliverBatch(items: readonly DeliveryItem[]) {
      calls.push(items.map((i) => i.event.name));
      return items.map((i) => answer(i.event));
    },
    async close() {
      closes += 1;
    },
  };
  return { transport, calls, closes: () => closes };
}

const named = (...names: string[]) => names.map((name) => conformanceEvent({ name }));

describe('topicRouter: routing', () => {
  it('an exact name takes its route before any pattern', async () => {
    const exact = recorder('exact');
    const pattern = recorder('pattern');
    const router = topicRouter({
      'library.loan.*': pattern.transport,
      'library.loan.Returned': exact.transport,
    });
    await router.deliverBatch(
      conformanceItems(named('library.loan.Returned', 'library.loan.Made')),
      { signal: never },
    );
    expect(exact.calls).toEqual([['library.loan.Returned']]);
    expect(pattern.calls).toEqual([['library.loan.Made']]);
  });

  it('else the first pattern that matches, in declaration order', () => {
    const loans = recorder('loans').transport;
    const library = recorder('library').transport;
    const router = topicRouter({ 'library.loan.*': loans, 'library.*': library });
    expect(router.routeOf('library.loan.Made')).toBe(loans);
    expect(router.routeOf('library.book.Added')).toBe(library);
    const reversed = topicRouter({ 'library.*': library, 'library.loan.*': loans });
    expect(reversed.routeOf('library.loan.Made')).toBe(library);
  });

  it('else the default; without one, nothing', () => {
    const fallback = recorder('fallback').transport;
    expect(
      topicRouter({ 'notify.*': recorder('n').transport }, { default: fallback }).routeOf(
        'billing.Paid',
      ),
    ).toBe(fallback);
    expect(
      topicRouter({ 'notify.*': recorder('n').transport }).routeOf('billing.Paid'),
    ).toBeUndefined();
  });

  it('an unrouted event fails with a DeliveryError naming the topic, never sent', async () => {
    const notify = recorder('notify');
    const router = topicRouter({ 'notify.*': notify.transport });
    const results = await router.deliverBatch(
      conformanceItems(named('billing.Paid', 'notify.Sent')),
      { signal: never },
    );
    expect(results[0].status).toBe('failed');
    const error = (results[0] as { error: unknown }).error;
    expect(error).toBeInstanceOf(DeliveryError);
    expect((error as Error).message).toBe(
      'topicRouter: no route takes topic "billing.Paid" (routes: notify.*; no default)',
    );
    expect(results[1]).toEqual({ status: 'sent' });
    const [one] = named('billing.Paid');
    await expect(router.deliver(one, conformanceItems([one])[0].context)).rejects.toBeInstanceOf(
      DeliveryError,
    );
  });

  it('splits a batch per destination, one call each with its items in order, and puts the results back in item order', async () => {
    const kafka = recorder('kafka', (e) =>
      (e.payload as { n: number }).n % 2 === 0
        ? { status: 'failed', error: new Error('kafka refused') }
        : { status: 'sent' },
    );
    const hooks = recorder('hooks', () => ({ status: 'retryAfter', seconds: 30 }));
    const router = topicRouter({ 'library.loan.*': kafka.transport, 'notify.*': hooks.transport });
    const events = [
      conformanceEvent({ name: 'library.loan.Made', payload: { n: 1 } }),
      conformanceEvent({ name: 'notify.Sent', payload: { n: 2 } }),
      conformanceEvent({ name: 'library.loan.Made', payload: { n: 4 } }),
      conformanceEvent({ name: 'unknown.Topic', payload: { n: 5 } }),
      conformanceEvent({ name: 'library.loan.Returned', payload: { n: 7 } }),
    ];
    const results = await router.deliverBatch(conformanceItems(events), { signal: never });
    expect(kafka.calls).toEqual([
      ['library.loan.Made', 'library.loan.Made', 'library.loan.Returned'],
    ]);
    expect(hooks.calls).toEqual([['notify.Sent']]);
    expect(results.map((r) => r.status)).toEqual([
      'sent',
      'retryAfter',
      'failed',
      'failed',
      'sent',
    ]);
    expect((results[2] as { error: Error }).error.message).toBe('kafka refused');
    expect((results[3] as { error: Error }).error.message).toMatch(
      /no route takes topic "unknown.Topic"/,
    );
  });

  it("a destination's throw fails only its own items; a deliver-only destination sends in order and its RetryAfter carries over", async () => {
    const sent: string[] = [];
    const broken: OutboxDelivery = {
      async deliverBatch() {
        throw new Error('broker down');
      },
    };
    const oneByOne: OutboxDelivery = {
      async deliver(e) {
        if (e.name === 'notify.Later') throw new RetryAfter(12);
        sent.push(e.id);
      },
    };
    const router = topicRouter({ 'library.*': broken, 'notify.*': oneByOne });
    const events = named('notify.A', 'library.x', 'notify.Later', 'notify.B');
    const results = await router.deliverBatch(conformanceItems(events), { signal: never });
    expect(results.map((r) => r.status)).toEqual(['sent', 'failed', 'retryAfter', 'sent']);
    expect(results[2]).toMatchObject({ seconds: 12, counts: true });
    expect(sent).toEqual([events[0].id, events[3].id]);
  });

  it('takes a plain function as a destination (the reference default=log_event)', async () => {
    const logged: string[] = [];
    const router = topicRouter({}, { default: (e) => void logged.push(e.name) });
    expect(
      await router.deliverBatch(conformanceItems(named('any.Thing')), { signal: never }),
    ).toEqual([{ status: 'sent' }]);
    expect(logged).toEqual(['any.Thing']);
  });

  it('refuses a bad pattern or a destination that is not a transport, naming the route', () => {
    const t = recorder('t').transport;
    expect(() => topicRouter({ 'library.*.loan': t })).toThrow(
      'topicRouter: routes["library.*.loan"]: "library.*.loan" is not a topic pattern: only a prefix ending in one * is (e.g. "library.*"); * and ? elsewhere are refused',
    );
    expect(() => topicRouter({ 'lib?': t })).toThrow(ConfigurationError);
    expect(() => topicRouter({ '': t })).toThrow(/a route needs a topic/);
    expect(() => topicRouter({ 'notify.*': {} as OutboxDelivery })).toThrow(
      'topicRouter: routes["notify.*"] must be a transport (with deliver or deliverBatch) or a function of the event',
    );
    expect(() => topicRouter({}, { default: 42 as never })).toThrow(
      /topicRouter: default must be a transport/,
    );
  });

  it('close() closes every destination once, even when one fails, and is idempotent', async () => {
    const a = recorder('a');
    const b = recorder('b');
    const failing: OutboxDelivery = {
      deliver: async () => {},
      close: async () => {
        throw new Error('close failed');
      },
    };
    const router = topicRouter(
      { 'a.*': a.transport, 'a.b.*': a.transport, 'x.*': failing },
      { default: b.transport },
    );
    await expect(router.close()).rejects.toThrow('close failed');
    await expect(router.close()).rejects.toThrow('close failed');
    expect([a.closes(), b.closes()]).toEqual([1, 1]);
  });
});

transportConformance(
  'topicRouter in front of a webhook (a real HTTP server)',
  async ({ runId, eventNames }) => {
    const server = await startWebhookServer();
    const hook = webhook({
      url: `${server.url}/${runId}`,
      allowsAddress: (a) => a === '127.0.0.1',
    });
    expect(eventNames.every((n) => n.startsWith('conformance.'))).toBe(true);
    return {
      transport: topicRouter({ 'conformance.*': hook }),
      received: async () => server.received(),
      failDestination: async () => {
        server.mode = 'down';
      },
      restoreDestination: async () => {
        server.mode = 'up';
      },
      failEvents: async (ids) => {
        for (const id of ids) server.refused.add(id);
      },
      stallDestination: async () => {
        server.mode = 'stalled';
      },
      cleanup: () => server.close(),
    };
  },
);

describeEachDialect('topicRouter through a real outbox', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('routes each event, and an unrouted event is retried and dead-lettered, never marked delivered', async () => {
    const loans = recorder('loans');
    const notify = recorder('notify');
    const schema = z.object({ n: z.number() });
    const config = defineOutbox({
      events: {
        'library.loan.Made': event({ schema }),
        'notify.Sent': event({ schema }),
        'billing.Paid': event({ schema }),
      },
      receivers: {
        router: receiver('*', {
          deliver: topicRouter({ 'library.loan.*': loans.transport, 'notify.*': notify.transport }),
          maxAttempts: 3,
        }),
      },
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('library.loan.Made', { n: 1 });
    await outbox.fire('billing.Paid', { n: 2 });
    await outbox.fire('notify.Sent', { n: 3 });
    const drained = await drainOutbox(outbox);
    expect(drained).toMatchObject({ succeeded: 2, dead: 1 });
    expect(loans.calls.flat()).toEqual(['library.loan.Made']);
    expect(notify.calls.flat()).toEqual(['notify.Sent']);
    const rows = await rowsOf(outbox, 'router');
    const billing = rows[1];
    expect([billing.status, billing.attempts]).toEqual(['dead', 3]);
    expect(billing.lastError).toBe(
      'DeliveryError: topicRouter: no route takes topic "billing.Paid" (routes: library.loan.*, notify.*; no default)',
    );
    await outbox.close();
  });
});
