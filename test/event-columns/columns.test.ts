import { DataTypes } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type CapturedChange,
  ConfigurationError,
  capture,
  defineOutbox,
  event,
  installCapture,
  type OutboxEvent,
  receiver,
  ValidationError,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { assertFired, drainOutbox } from '../../testing/index.js';
import { freshPrefix, openOutbox } from '../relay/support.js';
import { describeEachDialect, sqlOf } from '../support/dialects.js';

const payload = z.object({ n: z.number() });

const COLUMNS = {
  order_id: { type: 'bigint', index: true },
  region: { type: 'text' },
  paid: { type: 'boolean' },
  shipped_at: { type: 'timestamp' },
  batch: { type: 'integer' },
  ref: { type: 'uuid' },
} as const;

/** An outbox with event columns, one handler recording the events it is handed. */
function columnConfig(
  seen: OutboxEvent[],
  columns: Record<
    string,
    { type: 'bigint' | 'text' | 'boolean' | 'timestamp' | 'integer' | 'uuid'; index?: boolean }
  > = COLUMNS,
) {
  return defineOutbox({
    events: { 'shop.Placed': event({ schema: payload }) },
    receivers: {
      'shop.log': receiver('shop.Placed', {
        handle: (e) => {
          seen.push(e);
        },
      }),
    },
    eventColumns: columns,
  });
}

/** The value of one column of every event, in sequence order, straight from the table. */
async function stored(db: TestDatabase, table: string, column: string): Promise<unknown[]> {
  const rows = await sqlOf(db.sequelize).select<Record<string, unknown>>(
    `SELECT ${column} AS v FROM ${table} ORDER BY id`,
    [],
  );
  return rows.map((r) => r.v);
}

describeEachDialect('event columns: extra_field_values', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('migrate adds each declared column and the index of index: true; the delivered event carries them', async () => {
    const seen: OutboxEvent[] = [];
    const outbox = await openOutbox(db, columnConfig(seen));
    const rt = runtimeOf(outbox);
    const table = await rt.store.describeEventsTable();
    const names = table.columns.map((c) => c.name);
    for (const c of Object.keys(COLUMNS)) expect(names).toContain(c);
    expect(table.indexes).toContain(`${rt.tables.prefix}events_col_order_id`);
    expect(table.indexes).not.toContain(`${rt.tables.prefix}events_col_region`);

    const at = new Date('2026-01-02T03:04:05.678Z');
    const ref = '0190a8a2-7c3e-7d4f-9a1b-2c3d4e5f6a7b';
    const fired = await outbox.fire(
      'shop.Placed',
      { n: 1 },
      {
        columns: {
          order_id: 42,
          region: 'eu',
          paid: true,
          shipped_at: at,
          batch: 7,
          ref,
        },
      },
    );
    await outbox.fire('shop.Placed', { n: 2 });
    expect(fired.columns).toEqual({
      order_id: '42',
      region: 'eu',
      paid: true,
      shipped_at: at,
      batch: 7,
      ref,
    });
    await drainOutbox(outbox);
    expect(seen.map((e) => e.columns)).toEqual([
      { order_id: '42', region: 'eu', paid: true, shipped_at: at, batch: 7, ref },
      { order_id: null, region: null, paid: null, shipped_at: null, batch: null, ref: null },
    ]);
    expect((await stored(db, rt.tables.events, 'region')).map((v) => v ?? null)).toEqual([
      'eu',
      null,
    ]);
  });

  it('fireMany sets each message’s own columns; a repeated idempotency key returns the stored event’s', async () => {
    const seen: OutboxEvent[] = [];
    const outbox = await openOutbox(db, columnConfig(seen));
    const fired = await outbox.fireMany([
      { name: 'shop.Placed', payload: { n: 1 }, columns: { order_id: '9007199254740993' } },
      { name: 'shop.Placed', payload: { n: 2 }, columns: { region: 'us' } },
      {
        name: 'shop.Placed',
        payload: { n: 3 },
        idempotencyKey: 'k1',
        columns: { order_id: 3n },
      },
    ]);
    expect(fired.map((e) => e.columns?.order_id)).toEqual(['9007199254740993', null, '3']);
    const again = await outbox.fire(
      'shop.Placed',
      { n: 3 },
      { idempotencyKey: 'k1', columns: { order_id: 99 } },
    );
    expect(again.duplicate).toBe(true);
    expect(again.columns?.order_id).toBe('3');
    await drainOutbox(outbox);
    expect(seen.map((e) => [e.columns?.order_id, e.columns?.region])).toEqual([
      // SQLite binds a bigint as a double: beyond 2^53 it keeps the nearest one.
      [dialect.name === 'sqlite' ? '9007199254740992' : '9007199254740993', null],
      [null, 'us'],
      ['3', null],
    ]);
  });

  it('every insert form writes every column type in the event’s own row: one event, a batch, and a large batch (PostgreSQL’s JSON form)', async () => {
    const seen: OutboxEvent[] = [];
    const outbox = await openOutbox(db, columnConfig(seen));
    const at = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i));
    const ref = (i: number) => `0190a8a2-7c3e-7d4f-9a1b-${String(i).padStart(12, '0')}`;
    const columnsOf = (i: number): Record<string, string | number | boolean | Date | null> =>
      i % 3 === 2
        ? { region: null }
        : {
            order_id: 1_000_000 + i,
            region: `r-${i}`,
            paid: i % 2 === 0,
            shipped_at: at(i),
            batch: 100 - i,
            ref: ref(i),
          };
    const expected = (i: number) =>
      i % 3 === 2
        ? { order_id: null, region: null, paid: null, shipped_at: null, batch: null, ref: null }
        : {
            order_id: String(1_000_000 + i),
            region: `r-${i}`,
            paid: i % 2 === 0,
            shipped_at: at(i),
            batch: 100 - i,
            ref: ref(i),
          };
    const message = (i: number) => ({
      name: 'shop.Placed' as const,
      payload: { n: i },
      columns: columnsOf(i),
    });
    await outbox.fire('shop.Placed', { n: 0 }, { columns: columnsOf(0) }); // one event
    await outbox.fireMany([1, 2, 3].map(message)); // a batch: arrays / one JSON array
    // From 250 events PostgreSQL binds each column as a JSON array (JSON_INSERT_FROM).
    await outbox.fireMany(Array.from({ length: 300 }, (_, k) => message(4 + k)));
    await drainOutbox(outbox);
    expect(seen).toHaveLength(304);
    const byN = [...seen].sort(
      (a, b) => (a.payload as { n: number }).n - (b.payload as { n: number }).n,
    );
    expect(byN.map((e) => e.columns)).toEqual(byN.map((_, i) => expected(i)));
  });

  it('an undeclared column or a value of the wrong type is a ValidationError naming the column; nothing is written', async () => {
    const seen: OutboxEvent[] = [];
    const outbox = await openOutbox(db, columnConfig(seen));
    await expect(
      outbox.fire('shop.Placed', { n: 1 }, { columns: { order: 1 } as never }),
    ).rejects.toThrow(/columns\.order is not a declared event column \(declared: batch, order_id/);
    await expect(
      outbox.fire('shop.Placed', { n: 1 }, { columns: { order_id: 'forty-two' } }),
    ).rejects.toThrow(
      /columns\.order_id must be a 64-bit integer .* \(a bigint column; got "forty-two"\)/,
    );
    await expect(
      outbox.fireMany([
        { name: 'shop.Placed', payload: { n: 1 }, columns: { region: 'eu' } },
        { name: 'shop.Placed', payload: { n: 2 }, columns: { paid: 'yes' } },
      ]),
    ).rejects.toBeInstanceOf(ValidationError);
    await expect(
      outbox.fire('shop.Placed', { n: 1 }, { columns: { batch: 2 ** 40 } }),
    ).rejects.toThrow(/columns\.batch must be an integer from -2147483648 to 2147483647/);
    await expect(
      outbox.fire('shop.Placed', { n: 1 }, { columns: { ref: 'not-a-uuid' } }),
    ).rejects.toThrow(/columns\.ref must be a UUID string/);
    expect(await runtimeOf(outbox).store.readEvents({})).toEqual([]);
  });

  it('migrate on a filled table adds a newly declared column, NULL for the events already there; it keeps a column no longer declared', async () => {
    const prefix = freshPrefix();
    const seen: OutboxEvent[] = [];
    const before = await openOutbox(db, columnConfig(seen, { region: { type: 'text' } }), {
      tablePrefix: prefix,
    });
    for (let n = 0; n < 50; n++)
      await before.fire('shop.Placed', { n }, { columns: { region: n % 2 ? 'eu' : 'us' } });
    const warnings: string[] = [];
    const logger = {
      debug() {},
      info() {},
      warn: (m: string) => warnings.push(m),
      error() {},
    };
    const after = await openOutbox(
      db,
      columnConfig(seen, { order_id: { type: 'bigint', index: true } }),
      { tablePrefix: prefix, logger },
    );
    expect(warnings.join('\n')).toMatch(
      /has columns eventColumns does not declare \(region\); kept/,
    );
    await after.fire('shop.Placed', { n: 50 }, { columns: { order_id: 7 } });
    const t = runtimeOf(after).tables.events;
    const orderIds = (await stored(db, t, 'order_id')).map((v) => (v === null ? null : String(v)));
    expect(orderIds).toEqual([...Array(50).fill(null), '7']);
    expect((await stored(db, t, 'region')).slice(0, 2)).toEqual(['us', 'eu']);
    await drainOutbox(after);
    expect(seen).toHaveLength(51);
    expect(seen[50].columns).toEqual({ order_id: '7' });
  });

  it('two processes migrating the same declared columns at once both succeed', async () => {
    const prefix = freshPrefix();
    const config = columnConfig([], { order_id: { type: 'bigint', index: true } });
    await openOutbox(db, columnConfig([], {}), { tablePrefix: prefix });
    const { createOutbox } = await import('../../src/index.js');
    const open = () =>
      createOutbox(config, {
        ...db.outboxOptions,
        wakeup: null,
        tablePrefix: prefix,
        logger: { debug() {}, info() {}, warn() {}, error() {} },
      });
    const [a, b] = [open(), open()];
    await Promise.all([a.migrate(), b.migrate()]);
    const table = await runtimeOf(a).store.describeEventsTable();
    expect(table.columns.filter((c) => c.name === 'order_id')).toHaveLength(1);
    expect(table.indexes).toContain(`${prefix}events_col_order_id`);
  });

  it('migrate refuses a column whose type differs from its declaration, naming both', async () => {
    const prefix = freshPrefix();
    await openOutbox(db, columnConfig([], { order_id: { type: 'text' } }), { tablePrefix: prefix });
    await expect(
      openOutbox(db, columnConfig([], { order_id: { type: 'boolean' } }), { tablePrefix: prefix }),
    ).rejects.toThrow(
      /order_id is declared boolean but the column is .*text.*; .*never alters or drops/i,
    );
  });

  it('fire and the relay say "run npx outbox migrate" while a declared column is missing', async () => {
    const prefix = freshPrefix();
    const seen: OutboxEvent[] = [];
    const old = await openOutbox(db, columnConfig(seen, {}), { tablePrefix: prefix });
    await old.fire('shop.Placed', { n: 1 });
    const config = columnConfig(seen, { order_id: { type: 'bigint' } });
    const { createOutbox } = await import('../../src/index.js');
    const unmigrated = createOutbox(config, {
      ...db.outboxOptions,
      wakeup: null,
      tablePrefix: prefix,
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
    const error = await unmigrated
      .fire('shop.Placed', { n: 2 }, { columns: { order_id: 1 } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(
      /has no column order_id, which defineOutbox\(\{ eventColumns \}\) declares\. Run `npx outbox migrate`/,
    );
    // The insert names every declared column, so an event that gives none is refused alike.
    const none = await unmigrated.fire('shop.Placed', { n: 3 }).catch((e: unknown) => e);
    expect(none).toBeInstanceOf(ConfigurationError);
    expect((none as Error).message).toMatch(
      /^fire\(\): .* has no column order_id.*npx outbox migrate/,
    );
    await expect(drainOutbox(unmigrated)).rejects.toThrow(
      /has no column order_id.*npx outbox migrate/,
    );
    await unmigrated.migrate();
    await drainOutbox(unmigrated);
    expect(seen.map((e) => e.columns)).toEqual([{ order_id: null }]);
  });

  it('fire on tables never migrated says the outbox tables are missing, with columns declared too', async () => {
    const { createOutbox } = await import('../../src/index.js');
    const bare = createOutbox(columnConfig([]), {
      ...db.outboxOptions,
      wakeup: null,
      tablePrefix: freshPrefix(),
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
    const error = await bare
      .fire('shop.Placed', { n: 1 }, { columns: { order_id: 1 } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(
      /^fire\(\): the outbox tables are missing\. Run `npx outbox migrate`/,
    );
    await bare.close();
  });

  it('assertFired({ columns }) counts only the events holding the values', async () => {
    const outbox = await openOutbox(db, columnConfig([]));
    await outbox.fire('shop.Placed', { n: 1 }, { columns: { order_id: 42 } });
    await outbox.fire('shop.Placed', { n: 2 }, { columns: { order_id: 7 } });
    await outbox.fire('shop.Placed', { n: 3 });
    expect(await assertFired(outbox, 'shop.Placed', { columns: { order_id: 42 } })).toEqual([
      { n: 1 },
    ]);
    await assertFired(outbox, 'shop.Placed', { columns: { order_id: null }, times: 1 });
    await expect(assertFired(outbox, 'shop.Placed', { columns: { order_id: 1 } })).rejects.toThrow(
      /expected at least one shop\.Placed event\(s\), found none/,
    );
  });

  it('an outbox without eventColumns carries no columns and asks nothing of the table', async () => {
    const seen: OutboxEvent[] = [];
    const outbox = await openOutbox(db, columnConfig(seen, {}));
    const fired = await outbox.fire('shop.Placed', { n: 1 });
    expect('columns' in fired).toBe(false);
    await drainOutbox(outbox);
    expect(seen).toHaveLength(1);
    expect('columns' in seen[0]).toBe(false);
  });

  it('capture’s extend and extendMany fill the captured event’s columns, checked as fire’s', async () => {
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    const Order = db.sequelize.define(
      'ColOrder',
      { total: DataTypes.INTEGER, region: DataTypes.STRING },
      { tableName: 'col_orders', timestamps: false, ...schema },
    );
    const Line = db.sequelize.define(
      'ColLine',
      { qty: DataTypes.INTEGER },
      { tableName: 'col_lines', timestamps: false, ...schema },
    );
    await Promise.all([Order.sync(), Line.sync()]);
    const seen: OutboxEvent[] = [];
    const config = defineOutbox({
      events: {},
      receivers: {
        'orders.log': receiver('shop.col_order.inserted', { handle: (e) => void seen.push(e) }),
        'lines.log': receiver('shop.col_line.inserted', { handle: (e) => void seen.push(e) }),
      },
      capture: [
        capture(Order, {
          app: 'shop',
          topic: 'shop.col_order.{operation}',
          operations: ['inserted'],
          extend: (change: CapturedChange) => ({
            columns: {
              order_id: change.pk as number,
              region: (change.after as { region: string }).region,
            },
          }),
        }),
        capture(Line, {
          app: 'shop',
          topic: 'shop.col_line.{operation}',
          operations: ['inserted'],
          extendMany: (changes: readonly CapturedChange[]) =>
            changes.map((c) => {
              const qty = (c.after as { qty: number }).qty;
              // 7 lines make half a batch: no integer.
              return { columns: { batch: qty === 7 ? 3.5 : qty } };
            }),
        }),
      ],
      eventColumns: {
        order_id: { type: 'bigint' },
        region: { type: 'text' },
        batch: { type: 'integer' },
      },
    });
    const outbox = await openOutbox(db, config);
    installCapture(outbox, db.sequelize);
    {
      const order = await Order.create({ total: 10, region: 'eu' });
      await Line.bulkCreate([{ qty: 2 }, { qty: 3 }]);
      await drainOutbox(outbox);
      expect(seen.map((e) => [e.name, e.columns])).toEqual([
        [
          'shop.col_order.inserted',
          { order_id: String(order.get('id')), region: 'eu', batch: null },
        ],
        ['shop.col_line.inserted', { order_id: null, region: null, batch: 2 }],
        ['shop.col_line.inserted', { order_id: null, region: null, batch: 3 }],
      ]);
      // A value of the wrong type fails the write, as fire() refuses it.
      await expect(
        db.sequelize.transaction((transaction) =>
          Order.create({ total: 1, region: 'x'.repeat(3) }, { transaction }).then(() =>
            Line.create({ qty: 7 }, { transaction }),
          ),
        ),
      ).rejects.toThrow(/columns\.batch must be an integer/);
    }
  });
});
