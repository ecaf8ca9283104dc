import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { QueryTypes, Sequelize } from 'sequelize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoSummary, runDemo } from '../examples/demo.js';
import { createShop, type Shop } from '../examples/shop/app.js';
import type { OrderUpdatedPayload } from '../examples/shop/outbox.generated.js';
import { OutOfStock } from '../examples/shop/receivers.js';
import { Mailer } from '../examples/shop/services.js';
import { silentLogger } from '../src/index.js';
import { postgresUrl, type TestDatabase } from '../testing/databases.js';
import { assertFired, drainOutbox } from '../testing/index.js';
import { describeEachDialect } from './support/dialects.js';

/**
 * The demo's script, restated: orders 1..200; order 77 wants more signed prints than the
 * shelf holds (rolled back); order 42 buys a grand piano over the card limit (declined);
 * every 10th order is cancelled; every 7th customer's mail server refuses the first send.
 */
const ORDERS = Array.from({ length: 200 }, (_, i) => i + 1);
const placed = ORDERS.filter((n) => n !== 77);
const cancelled = placed.filter((n) => n % 10 === 0);
const paid = placed.filter((n) => n % 10 !== 0 && n !== 42);
const mailRetried = paid.filter((n) => n % 7 === 0);
/** Order rows updated, each a captured shop.order.updated: paid, cancelled, and the repeated cancel. */
const updated = paid.length + cancelled.length + 1;
/** Every delivery the demo makes: capture, mail, release, history, and analytics of every event. */
const DELIVERED =
  placed.length -
  1 +
  paid.length +
  cancelled.length +
  updated +
  (placed.length + paid.length + cancelled.length + updated);

function collect(stream: PassThrough): () => string {
  let text = '';
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return () => text;
}

describe('npx outbox demo', () => {
  let dir: string;
  let code: number;
  let summary: DemoSummary;
  let stdout: () => string;
  let stderr: () => string;
  let db: Sequelize;
  const select = <T extends object = Record<string, unknown>>(
    sql: string,
    replacements: unknown[] = [],
  ): Promise<T[]> => db.query<T>(sql, { type: QueryTypes.SELECT, replacements });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-demo-test-'));
    const out = new PassThrough();
    const err = Object.assign(new PassThrough(), { isTTY: true });
    stdout = collect(out);
    stderr = collect(err);
    code = await runDemo({
      keep: true,
      dir,
      stdout: out,
      stderr: err,
      onSummary: (s) => {
        summary = s;
      },
    });
    db = new Sequelize({ dialect: 'sqlite', storage: summary.databaseFile, logging: false });
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('exits 0 within seconds and tells the story', () => {
    expect(code).toBe(0);
    expect(summary.ok).toBe(true);
    expect(summary.inOrderPerKey).toBe(true);
    expect(summary.totalMs).toBeLessThan(20_000);
    expect(stdout()).toContain('Summary:');
    expect(stdout()).toContain('none delivered: no order row, no event, no payment, no mail');
    expect(stdout()).not.toMatch(/PROBLEM|STILL OWED|SOMETHING EXISTS/);
    expect(stdout()).toContain(`Kept the database: sqlite3 ${join(dir, 'shop.sqlite')}`);
  });

  it('redraws one progress line in place on a terminal', () => {
    const redraws = stderr().split('\r\x1b[2K').filter(Boolean);
    expect(redraws.length).toBeGreaterThan(1);
    expect(DELIVERED).toBe(1191);
    expect(redraws.at(-1)).toMatch(/^ {3}relay: 1191 delivered .* 1 dead .*\n$/);
    expect(redraws.slice(0, -1).every((line) => !line.includes('\n'))).toBe(true);
  });

  it('the rolled-back order left no order, no event and no delivery', async () => {
    expect(summary.rolledBack).toEqual({
      orderId: 'order-0077',
      reason: 'out of stock: 5 × signed-print wanted, 3 available',
      eventsRecorded: 0,
      orderRows: 0,
      payments: 0,
      mails: 0,
      analyticsEvents: 0,
      logLines: 0,
    });
    // Read back independently of the demo's own checks.
    expect(await select("SELECT id FROM shop_orders WHERE id = 'order-0077'")).toEqual([]);
    expect(await select("SELECT id FROM outbox_events WHERE payload LIKE '%order-0077%'")).toEqual(
      [],
    );
    expect(await select("SELECT quantity FROM shop_stock WHERE sku = 'signed-print'")).toEqual([
      { quantity: 3 },
    ]);
    expect(summary.onCommitLogLines).toBe(placed.length);
  });

  it('every delivery due succeeded but the declined payment, which is a dead letter', async () => {
    expect(summary.owed).toBe(0);
    expect(
      await select(
        'SELECT status, COUNT(*) AS n FROM outbox_deliveries GROUP BY status ORDER BY 1',
      ),
    ).toEqual([
      { status: 'dead', n: 1 },
      { status: 'pending', n: placed.length },
      { status: 'succeeded', n: DELIVERED },
    ]);
    // each placed order's expiry is scheduled two days ahead, not owed
    expect(summary.scheduled).toBe(placed.length);
    expect(
      await select(
        "SELECT COUNT(*) AS n FROM outbox_deliveries WHERE status = 'pending' AND receiver_key = 'shop.expireUnpaidOrder' AND due_at > ?",
        [Date.now()],
      ),
    ).toEqual([{ n: placed.length }]);
    expect(summary.delivered).toEqual({
      'payments.capture': placed.length - 1,
      'mail.orderConfirmation': paid.length,
      'shop.releaseStock': cancelled.length,
      'shop.orderHistory': updated,
      'analytics.forward': placed.length + cancelled.length + paid.length + updated,
    });
    expect(summary.dead).toEqual([
      {
        receiverKey: 'payments.capture',
        eventName: 'shop.OrderPlaced',
        orderId: 'order-0042',
        attempts: 1,
        error:
          "PermanentFailure: card declined (caused by CardDeclined: $8,000.00 is over the card's $5,000.00 limit)",
      },
    ]);
    expect(await select("SELECT status FROM shop_orders WHERE id = 'order-0042'")).toEqual([
      { status: 'placed' },
    ]);
  });

  it('the mails the flaky server refused were retried and sent once each', async () => {
    expect(summary.retried).toBe(mailRetried.length);
    expect(Object.keys(summary.retriedBy)).toEqual(['mail.orderConfirmation']);
    expect(summary.retriedBy['mail.orderConfirmation']).toEqual({
      deliveries: mailRetried.length,
      firstError: 'Error: SMTP 421: service busy, try again later',
    });
    const attempts = await select<{ attempts: number; n: number }>(
      "SELECT attempts, COUNT(*) AS n FROM outbox_deliveries WHERE receiver_key = 'mail.orderConfirmation' GROUP BY attempts ORDER BY 1",
    );
    expect(attempts).toEqual([
      { attempts: 1, n: paid.length - mailRetried.length },
      { attempts: 2, n: mailRetried.length },
    ]);
    const mails = await select<{ order_id: string }>(
      'SELECT order_id FROM shop_sent_mail ORDER BY 1',
    );
    expect(mails.map((m) => m.order_id)).toEqual(paid.map(orderId));
  });

  it('paid orders have one payment each; cancelled ones none, and their stock is back', async () => {
    const payments = await select<{ order_id: string }>(
      'SELECT order_id FROM shop_payments ORDER BY 1',
    );
    expect(payments.map((p) => p.order_id)).toEqual(paid.map(orderId));
    const statuses = await select<{ status: string; n: number }>(
      'SELECT status, COUNT(*) AS n FROM shop_orders GROUP BY status ORDER BY 1',
    );
    expect(statuses).toEqual([
      { status: 'cancelled', n: cancelled.length },
      { status: 'paid', n: paid.length },
      { status: 'placed', n: 1 },
    ]);
    // Stock = 10,000 minus what orders still standing took; cancellations gave theirs back.
    const orders = await select<{ items: string; status: string }>(
      'SELECT items, status FROM shop_orders',
    );
    const taken: Record<string, number> = { mug: 0, tee: 0, poster: 0 };
    for (const o of orders.filter((o) => o.status !== 'cancelled')) {
      for (const item of JSON.parse(o.items) as { sku: string; quantity: number }[]) {
        if (item.sku in taken) taken[item.sku] += item.quantity;
      }
    }
    const stock = await select<{ sku: string; quantity: number }>(
      "SELECT sku, quantity FROM shop_stock WHERE sku IN ('mug', 'tee', 'poster') ORDER BY 1",
    );
    expect(stock).toEqual(
      ['mug', 'poster', 'tee'].map((sku) => ({ sku, quantity: 10_000 - taken[sku] })),
    );
  });

  it("a double-clicked Cancel was announced once: the idempotency key's job", async () => {
    expect(summary.ordersCancelled).toBe(cancelled.length);
    expect(summary.duplicateCancels).toBe(1);
    const [{ n }] = await select<{ n: number }>(
      "SELECT COUNT(*) AS n FROM outbox_events WHERE name = 'shop.OrderCancelled'",
    );
    expect(n).toBe(cancelled.length);
  });
});

function orderId(n: number): string {
  return `order-${String(n).padStart(4, '0')}`;
}

/**
 * The shop's receivers one order at a time, the way the README's testing section says:
 * fire through the app, `drainOutbox` through the relay's own path, read the outcome.
 * On PostgreSQL too: `reserveStock` takes a row lock there (SELECT … FOR UPDATE).
 */
describeEachDialect('the shop example, tested with drainOutbox and assertFired', (dialect) => {
  let db: TestDatabase;
  let sequelize: Sequelize;
  let shop: Shop;

  beforeAll(async () => {
    db = await dialect.open();
    // The shop's tables and the outbox's go in the test's own schema on PostgreSQL.
    sequelize =
      dialect.name === 'postgres'
        ? new Sequelize(postgresUrl(), {
            logging: false,
            dialectOptions: { options: `-c search_path=${db.outboxOptions.schema}` },
          })
        : db.sequelize;
    shop = createShop(sequelize, {
      outbox: { logger: silentLogger },
      mailer: new Mailer((mail) => mail.to.endsWith('@slow-mail.example')),
      log: () => {},
    });
    await shop.setUp({ mug: 100, 'signed-print': 1, 'grand-piano': 1 });
  });
  afterAll(async () => {
    await shop?.close();
    if (sequelize !== db.sequelize) await sequelize.close();
    await db.cleanup();
  });

  const stockOf = async (sku: string) =>
    (await shop.models.StockItem.findByPk(sku, { rejectOnEmpty: true })).quantity;

  it('a placed order is paid, announced and mailed, each exactly once', async () => {
    await shop.placeOrder({
      id: 'o-paid',
      customerEmail: 'ann@mail.example',
      items: [{ sku: 'mug', quantity: 2 }],
    });
    expect(await stockOf('mug')).toBe(98); // reserved inline, in the order's transaction
    const counts = await drainOutbox(shop.outbox);
    // payments.capture + mail + analytics for OrderPlaced and for PaymentCaptured, and the
    // captured shop.order.updated of its status going to paid: history + analytics
    expect(counts).toMatchObject({ succeeded: 6, failed: 0, dead: 0 });
    const captured = await assertFired(shop.outbox, 'payments.PaymentCaptured', { times: 1 });
    expect(captured).toEqual([{ orderId: 'o-paid', amountCents: 2_400, provider: 'fakepay' }]);
    expect((await shop.models.Order.findByPk('o-paid'))?.status).toBe('paid');
    // The order's update wrote its event in the payment's transaction, typed from Order.
    const [change] = await capturedUpdates('o-paid');
    expect(change).toMatchObject({
      model: 'shop.Order',
      operation: 'updated',
      pk: 'o-paid',
      changed: ['status'],
      before: { id: 'o-paid', status: 'placed', totalCents: 2_400 },
      after: { id: 'o-paid', status: 'paid', items: [{ sku: 'mug', quantity: 2 }] },
    });
    expect(shop.history.changes).toEqual([{ orderId: 'o-paid', from: 'placed', to: 'paid' }]);
    expect(await shop.models.Payment.count({ where: { orderId: 'o-paid' } })).toBe(1);
    expect(await shop.models.SentMail.count({ where: { orderId: 'o-paid' } })).toBe(1);
    expect(await drainOutbox(shop.outbox)).toMatchObject({ succeeded: 0 });
  });

  it('a mail the server refuses once is retried, and sent once', async () => {
    await shop.placeOrder({
      id: 'o-slow',
      customerEmail: 'bob@slow-mail.example',
      items: [{ sku: 'mug', quantity: 1 }],
    });
    const counts = await drainOutbox(shop.outbox);
    expect(counts).toMatchObject({ succeeded: 6, failed: 1, dead: 0 });
    expect(shop.mailer.sent.filter((m) => m.to === 'bob@slow-mail.example')).toHaveLength(1);
    expect(await shop.models.SentMail.count({ where: { orderId: 'o-slow' } })).toBe(1);
  });

  it('a declined card is a dead letter after one attempt, and nothing is announced', async () => {
    await shop.placeOrder({
      id: 'o-piano',
      customerEmail: 'cy@mail.example',
      items: [{ sku: 'grand-piano', quantity: 1 }],
    });
    const counts = await drainOutbox(shop.outbox);
    expect(counts).toMatchObject({ succeeded: 1, dead: 1 }); // analytics got OrderPlaced
    await assertFired(shop.outbox, 'payments.PaymentCaptured', { times: 2 }); // the two above
    expect(await shop.models.Payment.count({ where: { orderId: 'o-piano' } })).toBe(0);
    expect((await shop.models.Order.findByPk('o-piano'))?.status).toBe('placed');
  });

  it('an order the shelf cannot fill rolls back with its event', async () => {
    const before = (await assertFired(shop.outbox, 'shop.OrderPlaced')).length;
    await expect(
      shop.placeOrder({
        id: 'o-short',
        customerEmail: 'di@mail.example',
        items: [{ sku: 'signed-print', quantity: 2 }],
      }),
    ).rejects.toBeInstanceOf(OutOfStock);
    expect(await assertFired(shop.outbox, 'shop.OrderPlaced')).toHaveLength(before);
    expect(await shop.models.Order.findByPk('o-short')).toBeNull();
    expect(await stockOf('signed-print')).toBe(1);
    expect(await drainOutbox(shop.outbox)).toMatchObject({ succeeded: 0, dead: 0 });
  });

  it('a cancelled order is not charged and its stock comes back, once per double click', async () => {
    await shop.placeOrder({
      id: 'o-cancel',
      customerEmail: 'ed@mail.example',
      items: [{ sku: 'mug', quantity: 5 }],
    });
    const stock = await stockOf('mug');
    expect(await shop.cancelOrder('o-cancel', 'changed my mind')).toBe(true);
    expect(await shop.cancelOrder('o-cancel', 'changed my mind')).toBe(false);
    await drainOutbox(shop.outbox);
    expect(await stockOf('mug')).toBe(stock + 5);
    expect(await shop.models.Payment.count({ where: { orderId: 'o-cancel' } })).toBe(0);
    // Model.update (a bulk update) is captured too, each click's: placed → cancelled, then
    // cancelled → cancelled, which the history skips.
    const changes = await capturedUpdates('o-cancel');
    expect(changes.map((c) => [c.before.status, c.after.status, c.changed])).toEqual([
      ['placed', 'cancelled', ['status']],
      ['cancelled', 'cancelled', ['status']],
    ]);
    expect(shop.history.changes.filter((c) => c.orderId === 'o-cancel')).toEqual([
      { orderId: 'o-cancel', from: 'placed', to: 'cancelled' },
    ]);
  });

  /** The captured shop.order.updated envelopes of one order, oldest first. */
  async function capturedUpdates(id: string): Promise<OrderUpdatedPayload[]> {
    const rows = await sequelize.query<{ payload: unknown }>(
      "SELECT payload FROM outbox_events WHERE name = 'shop.order.updated' ORDER BY id",
      { type: QueryTypes.SELECT },
    );
    return rows
      .map((r) => (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload))
      .filter((p: OrderUpdatedPayload) => p.pk === id);
  }
});
