import { DataTypes } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  capture,
  createOutbox,
  defineOutbox,
  installCapture,
  type OutboxLogger,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import { eventCount } from './support.js';

/** A logger that records its warnings. */
function recordingLogger(): OutboxLogger & { warnings: string[] } {
  const warnings: string[] = [];
  const ignore = () => {};
  return {
    warnings,
    debug: ignore,
    info: ignore,
    warn: (message: string) => void warnings.push(message),
    error: ignore,
  } as OutboxLogger & { warnings: string[] };
}

describeEachDialect('a capture declared and never installed', (dialect) => {
  let db: TestDatabase;
  let Order: ReturnType<TestDatabase['sequelize']['define']>;

  beforeAll(async () => {
    db = await dialect.open();
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    Order = db.sequelize.define(
      'UninstalledOrder',
      { status: DataTypes.STRING },
      { tableName: 'uninstalled_orders', ...schema },
    );
    await Order.sync();
  });
  afterAll(async () => {
    await db.cleanup();
  });

  const configFor = () =>
    defineOutbox({ events: {}, capture: [capture(Order as never, { app: 'shop' })] });

  it('warns once, through the outbox logger, at the first captured write that goes uncaptured', async () => {
    const logger = recordingLogger();
    const outbox = createOutbox(configFor(), { ...db.outboxOptions, logger });
    await outbox.migrate();
    expect(logger.warnings).toEqual([]); // nothing at createOutbox: install may come later
    await Order.create({ status: 'placed' });
    await Order.create({ status: 'placed' });
    await Order.update({ status: 'paid' }, { where: {} });
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toMatch(
      /^change capture is declared for UninstalledOrder \(capture\(UninstalledOrder\)\), but installCapture\(outbox\) was never called for this outbox: this write \(save\)/,
    );
    expect(await eventCount(outbox)).toBe(0);
    await outbox.close();
  });

  it('says nothing when installCapture is called, even after an await', async () => {
    const logger = recordingLogger();
    const outbox = createOutbox(configFor(), { ...db.outboxOptions, logger });
    await outbox.migrate();
    installCapture(outbox);
    const before = await eventCount(outbox);
    await Order.create({ status: 'placed' });
    expect(logger.warnings).toEqual([]);
    expect(await eventCount(outbox)).toBe(before + 1);
    await outbox.close();
  });

  it('says nothing after close()', async () => {
    const logger = recordingLogger();
    const outbox = createOutbox(configFor(), { ...db.outboxOptions, logger });
    await outbox.close();
    await Order.create({ status: 'placed' });
    expect(logger.warnings).toEqual([]);
  });
});
