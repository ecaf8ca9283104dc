import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMetrics } from '../../cli/metrics-server.js';
import {
  ConfigurationError,
  defineOutbox,
  event,
  PermanentFailure,
  receiver,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox, T0, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

/**
 * The value of one sample of the exposition text: `name{labels} value`, the labels given in
 * the order prom-client writes them (as declared).
 */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const rendered = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',');
  const head = rendered ? `${name}{${rendered}} ` : `${name} `;
  const line = text.split('\n').find((l) => l.startsWith(head));
  if (line === undefined) throw new Error(`no sample ${head.trim()} in:\n${text}`);
  return Number(line.slice(head.length));
}

describeEachDialect('outbox.metrics()', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const OrderPlaced = event({ schema: z.object({ orderId: z.string() }) });
  const config = defineOutbox({
    events: { 'shop.OrderPlaced': OrderPlaced },
    receivers: {
      'mail.send': receiver(OrderPlaced, { handle: () => {} }),
      'billing.charge': receiver(OrderPlaced, {
        handle: () => {
          throw new Error('card declined');
        },
      }),
      'audit.record': receiver(OrderPlaced, {
        handle: () => {
          throw new PermanentFailure('refused');
        },
      }),
      'offers.expire': receiver(OrderPlaced, { due: { hours: 1 }, handle: () => {} }),
    },
  });

  async function setup(healthCacheMs?: number) {
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    const registry = new Registry();
    const returned = outbox.metrics(registry, { healthCacheMs });
    return { clock, outbox, registry, returned };
  }

  it('counts recorded verdicts by receiver and outcome after real deliveries', async () => {
    const { outbox, registry, returned } = await setup();
    expect(returned).toBe(registry);
    for (const orderId of ['o1', 'o2', 'o3']) await outbox.fire('shop.OrderPlaced', { orderId });
    await outbox.deliverPending({ now: T0 });

    const text = await registry.metrics();
    const count = (receiver: string, outcome: string) =>
      sample(text, 'outbox_deliveries_total', { receiver, outcome });
    expect(count('mail.send', 'succeeded')).toBe(3);
    expect(count('billing.charge', 'failed')).toBe(3);
    expect(count('audit.record', 'dead')).toBe(3);
    // every durable receiver starts at zero, so a rate() alert has a series before the first failure
    expect(count('mail.send', 'failed')).toBe(0);
    expect(count('offers.expire', 'succeeded')).toBe(0);
  });

  it('times each attempt per receiver, and the claim and record statements', async () => {
    const { outbox, registry } = await setup();
    for (const orderId of ['o1', 'o2']) await outbox.fire('shop.OrderPlaced', { orderId });
    await outbox.deliverPending({ now: T0 });

    const text = await registry.metrics();
    for (const receiver of ['mail.send', 'billing.charge', 'audit.record'])
      expect(sample(text, 'outbox_delivery_duration_seconds_count', { receiver })).toBe(2);
    expect(
      sample(text, 'outbox_delivery_duration_seconds_sum', { receiver: 'mail.send' }),
    ).toBeGreaterThan(0);
    expect(sample(text, 'outbox_claim_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    // failures and dead letters are recorded in one statement (handler successes commit with their work)
    expect(sample(text, 'outbox_record_duration_seconds_count')).toBeGreaterThanOrEqual(1);
  });

  it("counts what the relay's idle sweep pruned", async () => {
    const Gone = event({ schema: z.object({ n: z.number() }), retention: 'succeeded' });
    const sweeping = defineOutbox({
      events: { 'i.Gone': Gone },
      receivers: { 'r.gone': receiver(Gone, { handle: () => {} }) },
    });
    const outbox = await openOutbox(db, sweeping, { clock: testClock().now });
    const registry = new Registry();
    outbox.metrics(registry);
    expect(sample(await registry.metrics(), 'outbox_pruned_events_total')).toBe(0);
    for (const n of [1, 2]) await outbox.fire('i.Gone', { n });
    let mono = 0;
    // Delivered at the first passes; swept at the first idle pass an interval (300 s) on.
    await outbox.runRelay({
      passes: 6,
      monotonic: () => mono,
      sleep: async () => {
        mono += 600_000;
      },
    });
    const text = await registry.metrics();
    expect(sample(text, 'outbox_pruned_events_total')).toBe(2);
    expect(sample(text, 'outbox_pruned_deliveries_total')).toBe(2);
  });

  it('reads the gauges from health() at scrape time', async () => {
    const { clock, outbox, registry } = await setup();
    for (const orderId of ['o1', 'o2']) await outbox.fire('shop.OrderPlaced', { orderId });
    await outbox.deliverPending({ now: T0 });
    clock.advance(90_000);

    const text = await registry.metrics();
    expect(sample(text, 'outbox_owed')).toBe(2); // billing's two failures, awaiting their retry
    expect(sample(text, 'outbox_dead')).toBe(2);
    expect(sample(text, 'outbox_scheduled')).toBe(2); // offers.expire, due in an hour
    expect(sample(text, 'outbox_claimed')).toBe(0);
    expect(sample(text, 'outbox_lapsed_leases')).toBe(0);
    // billing's rows were owed from their events' record time, T0: 90 s ago
    expect(sample(text, 'outbox_oldest_owed_age_seconds')).toBe(90);
  });

  it('serves a scrape storm from one health read for healthCacheMs', async () => {
    const { clock, outbox, registry } = await setup(5_000);
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    expect(sample(await registry.metrics(), 'outbox_owed')).toBe(3);
    await outbox.fire('shop.OrderPlaced', { orderId: 'o2' });
    clock.advance(4_000);
    expect(sample(await registry.metrics(), 'outbox_owed')).toBe(3); // cached
    clock.advance(1_000);
    expect(sample(await registry.metrics(), 'outbox_owed')).toBe(6); // read again
  });

  it('the endpoint serves the registry over HTTP, and is closed afterwards', async () => {
    const { outbox, registry } = await setup();
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    await outbox.deliverPending({ now: T0 });
    const server = await serveMetrics(registry, '127.0.0.1', 0);
    try {
      const response = await fetch(server.url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe(registry.contentType);
      const text = await response.text();
      expect(
        sample(text, 'outbox_deliveries_total', { receiver: 'mail.send', outcome: 'succeeded' }),
      ).toBe(1);
      expect(sample(text, 'outbox_dead')).toBe(1);
      expect((await fetch(server.url.replace('/metrics', '/other'))).status).toBe(404);
    } finally {
      await server.close();
    }
    await expect(fetch(server.url)).rejects.toThrow();
  });

  it('without a registry registers on a new one; twice on one registry counts once', async () => {
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    const fresh = outbox.metrics();
    expect(fresh).toBeInstanceOf(Registry);
    expect(outbox.metrics(fresh)).toBe(fresh);
    await outbox.fire('shop.OrderPlaced', { orderId: 'o1' });
    await outbox.deliverPending({ now: T0 });
    const text = await fresh.metrics();
    expect(
      sample(text, 'outbox_deliveries_total', { receiver: 'mail.send', outcome: 'succeeded' }),
    ).toBe(1);
    expect(sample(text, 'outbox_delivery_duration_seconds_count', { receiver: 'mail.send' })).toBe(
      1,
    );
  });

  it('refuses a registry that already holds another outbox’s metrics, and something that is not a registry', async () => {
    const { registry } = await setup();
    const other = await openOutbox(db, config);
    expect(() => other.metrics(registry)).toThrow(ConfigurationError);
    expect(() => other.metrics(registry)).toThrow(/already holds the metrics of another outbox/);
    expect(() => other.metrics({} as Registry)).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: outbox.metrics(registry) takes a prom-client Registry (new Registry(), or prom-client’s \`register\`); got something else]`,
    );
  });
});
