import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { DataTypes, QueryTypes, Sequelize } from 'sequelize';
import { describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import {
  assertFired,
  drainOutbox,
  mariadbUrl,
  postgresUrl,
  type TestDatabase,
  withSearchPath,
} from '../../testing/index.js';
import { describeEachDialect } from '../support/dialects.js';
import { tablesOf } from './support/module-level-app.js';

const storageOf = (db: TestDatabase) => db.url.slice('sqlite:'.length);

/** Whether a test database still exists, asked from outside it. */
async function exists(db: TestDatabase): Promise<boolean> {
  if (db.dialect === 'sqlite') return existsSync(dirname(storageOf(db)));
  if (db.dialect === 'mariadb' || db.dialect === 'mysql') {
    const outside = new Sequelize(mariadbUrl(), { logging: false });
    try {
      const rows = await outside.query(
        'SELECT 1 FROM information_schema.schemata WHERE schema_name = :name',
        { replacements: { name: new URL(db.url).pathname.slice(1) }, type: QueryTypes.SELECT },
      );
      return rows.length === 1;
    } finally {
      await outside.close();
    }
  }
  const outside = new Sequelize(postgresUrl(), { logging: false });
  try {
    const rows = await outside.query(
      'SELECT 1 FROM information_schema.schemata WHERE schema_name = :schema',
      { replacements: { schema: db.outboxOptions.schema }, type: QueryTypes.SELECT },
    );
    return rows.length === 1;
  } finally {
    await outside.close();
  }
}

describe('withSearchPath', () => {
  it("sets the connections' search path through the options parameter, keeping what the URL carries", () => {
    expect(withSearchPath('postgres://postgres@127.0.0.1:5432/test', 't_1')).toBe(
      'postgres://postgres@127.0.0.1:5432/test?options=-c+search_path%3Dt_1',
    );
    expect(
      withSearchPath(
        'postgres://u:p%40ss@db:5432/app?sslmode=require&options=-c%20statement_timeout%3D5000',
        't_1',
      ),
    ).toBe(
      'postgres://u:p%40ss@db:5432/app?sslmode=require&options=-c+statement_timeout%3D5000+-c+search_path%3Dt_1',
    );
  });
});

describeEachDialect('a test database', (dialect) => {
  const config = defineOutbox({
    events: { 'orders.OrderPlaced': event({ schema: z.object({ orderId: z.string() }) }) },
    receivers: { 'audit.record': receiver('orders.OrderPlaced', { handle: () => {} }) },
  });

  it("url opens it from a Sequelize of the app's own: the app's tables and the outbox's land in it", async () => {
    const db = await dialect.open();
    const app = new Sequelize(db.url, { logging: false });
    onTestFinished(async () => {
      await app.close();
      await db.cleanup();
    });
    const Order = app.define(
      'Order',
      { id: { type: DataTypes.STRING, primaryKey: true } },
      { tableName: 'orders', timestamps: false },
    );
    await app.sync();
    const outbox = createOutbox(config, { sequelize: app, wakeup: null, logger: silentLogger });
    await outbox.migrate();
    await app.transaction(async (transaction) => {
      await Order.create({ id: 'o1' }, { transaction });
      await outbox.fire('orders.OrderPlaced', { orderId: 'o1' }, { transaction });
    });
    expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 1 });
    expect(await assertFired(outbox, 'orders.OrderPlaced', { times: 1 })).toEqual([
      { orderId: 'o1' },
    ]);
    expect(await tablesOf(db)).toEqual(
      expect.arrayContaining(['orders', 'outbox_deliveries', 'outbox_events']),
    );
    // The helper's own outboxOptions reach the same tables.
    const same = createOutbox(config, { ...db.outboxOptions, wakeup: null, logger: silentLogger });
    expect(await assertFired(same, 'orders.OrderPlaced', { times: 1 })).toEqual([
      { orderId: 'o1' },
    ]);
  });

  it('cleanup drops it; a second cleanup, or Symbol.asyncDispose after it, does nothing', async () => {
    const db = await dialect.open();
    await db.sequelize.query('SELECT 1');
    expect(await exists(db)).toBe(true);
    await db.cleanup();
    expect(await exists(db)).toBe(false);
    await expect(db.cleanup()).resolves.toBeUndefined();
    await expect(db[Symbol.asyncDispose]()).resolves.toBeUndefined();
  });

  if (dialect.name === 'sqlite') {
    it('a SQLite test database writes no file until something connects', async () => {
      const db = await dialect.open();
      onTestFinished(() => db.cleanup());
      expect(existsSync(storageOf(db))).toBe(false);
      await db.sequelize.query('SELECT 1');
      expect(existsSync(storageOf(db))).toBe(true);
    });
  }

  describe('cleanup registered with onTestFinished runs when the test fails', () => {
    let opened: TestDatabase | undefined;
    it.fails('a test that opens a database, registers its cleanup, then fails', async () => {
      const db = await dialect.open();
      opened = db;
      onTestFinished(() => db.cleanup());
      await db.sequelize.query('SELECT 1');
      expect('the value the test got').toBe('the value it wanted');
    });
    it('the database of the failed test is gone', async () => {
      expect(opened).toBeDefined();
      expect(await exists(opened!)).toBe(false);
    });
  });

  describe('a database declared with await using is dropped when the test fails', () => {
    let opened: TestDatabase | undefined;
    it.fails('a test that declares its database with await using, then fails', async () => {
      await using db = await dialect.open();
      opened = db;
      await db.sequelize.query('SELECT 1');
      expect('the value the test got').toBe('the value it wanted');
    });
    it('the database of the failed test is gone', async () => {
      expect(opened).toBeDefined();
      expect(await exists(opened!)).toBe(false);
    });
  });
});
