import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  createOutbox,
  defineOutbox,
  event,
  listenNotifyWakeup,
  type OutboxDelivery,
  type OutboxWakeup,
  receiver,
  silentLogger,
} from '../src/index.js';
import type { TestDatabase } from '../testing/databases.js';
import { describeEachDialect } from './support/dialects.js';

const Placed = event({ schema: z.object({ orderId: z.string() }) });
const Shipped = event({ schema: z.object({ orderId: z.string() }) });

/** A transport that counts its close() calls. */
function countingTransport(): OutboxDelivery & { closes: number } {
  const transport = {
    closes: 0,
    deliver: async () => {},
    close: async () => {
      transport.closes += 1;
    },
  };
  return transport;
}

/** A wakeup that counts its close() calls, serving the dialects given. */
function countingWakeup(dialects?: readonly string[]): OutboxWakeup & { closes: number } {
  const wakeup = {
    name: 'counting',
    capabilities: dialects ? { dialects } : {},
    closes: 0,
    signal: () => {},
    listen: async () => async () => {},
    close: async () => {
      wakeup.closes += 1;
    },
  };
  return wakeup;
}

describeEachDialect('createOutbox() and close()', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('outbox.close() closes each transport once, however many receivers share it, and the wakeup', async () => {
    const shared = countingTransport();
    const own = countingTransport();
    const wakeup = countingWakeup();
    const outbox = createOutbox(
      defineOutbox({
        events: { 'shop.OrderPlaced': Placed, 'shop.OrderShipped': Shipped },
        receivers: {
          'bus.placed': receiver(Placed, { deliver: shared }),
          'bus.shipped': receiver(Shipped, { deliver: shared }),
          'audit.placed': receiver(Placed, { deliver: own }),
          'mail.placed': receiver(Placed, { handle: () => {} }),
        },
      }),
      { ...db.outboxOptions, wakeup, logger: silentLogger },
    );
    await outbox.close();
    expect([shared.closes, own.closes, wakeup.closes]).toEqual([1, 1, 1]);
  });

  it('refuses a wakeup the database cannot serve, before anything is written', async () => {
    const other = dialect.name === 'sqlite' ? 'postgres' : 'sqlite';
    const prefix = `refused_${dialect.name}_`;
    const config = defineOutbox({
      events: { 'shop.OrderPlaced': Placed },
      receivers: { 'mail.placed': receiver(Placed, { handle: () => {} }) },
    });
    const refused: OutboxWakeup[] = [countingWakeup([other])];
    if (dialect.name === 'sqlite') refused.push(listenNotifyWakeup({ logger: silentLogger }));
    for (const wakeup of refused) {
      const error = (() => {
        try {
          createOutbox(config, { ...db.outboxOptions, tablePrefix: prefix, wakeup });
          return undefined;
        } catch (e) {
          return e;
        }
      })();
      expect(error, wakeup.name).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).path).toBe('wakeup');
      expect((error as Error).message).toMatch(
        new RegExp(`^createOutbox\\(\\{ wakeup \\}\\): ${wakeup.name} .*uses ${dialect.name}`),
      );
    }
    // Nothing was created: no table of that prefix exists.
    const tables = await db.sequelize.getQueryInterface().showAllTables();
    expect(tables.map(String).filter((t) => t.startsWith(prefix))).toEqual([]);
    // A wakeup that names this dialect is taken.
    const taken = createOutbox(config, {
      ...db.outboxOptions,
      tablePrefix: prefix,
      wakeup: countingWakeup([dialect.name]),
      logger: silentLogger,
    });
    await taken.close();
  });
});
