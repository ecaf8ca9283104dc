import { DataTypes } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  capture,
  createOutbox,
  defineOutbox,
  event,
  installCapture,
  type Outbox,
  receiver,
  silentLogger,
  ValidationError,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect, sqlOf } from '../support/dialects.js';
import { eventCount } from './support.js';

const Placed = event({ schema: z.object({ orderId: z.string() }) });
const Consumed = event({ schema: z.object({ orderId: z.string() }), retention: 'succeeded' });
const Settled = event({ schema: z.object({ orderId: z.string() }), retention: 'settled' });
const config = defineOutbox({
  events: { 'shop.OrderPlaced': Placed, 'shop.Consumed': Consumed, 'shop.Settled': Settled },
  receivers: { 'mail.confirm': receiver(Placed, { handle: () => {} }) },
});

describeEachDialect('fire() refuses what would go wrong silently or cryptically', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox<typeof config>;

  beforeAll(async () => {
    db = await dialect.open();
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger });
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  it('before migrate, fire() and fireMany() say the outbox tables are missing, with the driver error as cause', async () => {
    for (const attempt of [
      () => outbox.fire('shop.OrderPlaced', { orderId: 'o1' }),
      () => outbox.fireMany([{ name: 'shop.OrderPlaced', payload: { orderId: 'o2' } }]),
    ]) {
      const error = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ConfigurationError);
      const e = error as ConfigurationError;
      expect(e.code).toBe('OUTBOX_CONFIGURATION');
      expect(e.message).toMatch(
        /^fire(Many)?\(\): the outbox tables are missing\. Run `npx outbox migrate`/,
      );
      expect(String((e.cause as Error).message)).toMatch(
        dialect.name === 'postgres'
          ? /relation .* does not exist/
          : dialect.name === 'sqlite'
            ? /no such table/
            : /Table '.*' doesn't exist/,
      );
    }
  });

  it("before migrate, a captured model's write says the same, and its row is not written", async () => {
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    const Order = db.sequelize.define(
      'RefusedOrder',
      { status: DataTypes.STRING },
      { tableName: 'refused_orders', ...schema },
    );
    await Order.sync();
    const captured = createOutbox(
      defineOutbox({ events: {}, capture: [capture(Order as never, { app: 'shop' })] }),
      { ...db.outboxOptions, logger: silentLogger },
    );
    installCapture(captured);
    try {
      const error = await Order.create({ status: 'placed' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message).toMatch(
        /the outbox tables are missing\. Run `npx outbox migrate`/,
      );
      expect(await Order.count()).toBe(0);
    } finally {
      await captured.close();
    }
  });

  it('an error of the application inside the transaction is not mistaken for a missing outbox table', async () => {
    const error = await sqlOf(db.sequelize)
      .select('SELECT * FROM no_such_application_table', [])
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).not.toBeInstanceOf(ConfigurationError);
  });

  it('after close(), fire() and fireMany() refuse, naming the outbox, and write nothing', async () => {
    await outbox.migrate();
    const other = createOutbox(config, { ...db.outboxOptions, logger: silentLogger });
    await other.fire('shop.OrderPlaced', { orderId: 'open' });
    await other.close();
    const before = await eventCount(outbox);
    await expect(other.fire('shop.OrderPlaced', { orderId: 'late' })).rejects.toThrow(
      /^fire\(\): this outbox \(.*outbox_events.*\) is closed/,
    );
    await expect(
      other.fireMany([{ name: 'shop.OrderPlaced', payload: { orderId: 'late' } }]),
    ).rejects.toBeInstanceOf(ConfigurationError);
    expect(await eventCount(outbox)).toBe(before);
    // The outbox that is still open fires as before.
    await outbox.fire('shop.OrderPlaced', { orderId: 'still-open' });
    expect(await eventCount(outbox)).toBe(before + 1);
  });

  it('an idempotency key on an event deleted once consumed is refused, before anything is written', async () => {
    await outbox.migrate();
    const before = await eventCount(outbox);
    for (const [name, retention] of [
      ['shop.Consumed', 'succeeded'],
      ['shop.Settled', 'settled'],
    ] as const) {
      for (const attempt of [
        () => outbox.fire(name, { orderId: 'k' }, { idempotencyKey: `k-${name}` }),
        () =>
          outbox.fireMany([
            { name: 'shop.OrderPlaced', payload: { orderId: 'fine' } },
            { name, payload: { orderId: 'k' }, idempotencyKey: `k-${name}` },
          ]),
      ]) {
        const error = await attempt().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).path).toBe('idempotencyKey');
        expect((error as Error).message).toContain(
          `${name} is deleted once consumed (retention "${retention}"), so an idempotencyKey would protect only until the prune`,
        );
      }
    }
    expect(await eventCount(outbox)).toBe(before);
    // Without the key, the same events fire.
    await outbox.fire('shop.Consumed', { orderId: 'no-key' });
    expect(await eventCount(outbox)).toBe(before + 1);
  });
});
