/**
 * The write paths Sequelize reports least about: `upsert`, `increment`/`decrement` (no
 * hooks), and `bulkCreate` with `updateOnDuplicate` / `ignoreDuplicates` — each row
 * captured as what the database did with it, in every payload mode, on both dialects.
 */
import { DataTypes, type ModelStatic, type Model as SequelizeModel } from 'sequelize';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import {
  type CapturePayload,
  capture,
  defineOutbox,
  installCapture,
  type Outbox,
  receiver,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { capturingStatements, openOutbox, T0, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;
const MODES: readonly CapturePayload[] = ['keys', 'after', 'beforeAndAfter'];
const ISO = T0.toISOString();

let mark = 0;
async function markLog(outbox: Outbox) {
  mark = (await runtimeOf(outbox).store.readEvents({})).length;
}
async function logOf(outbox: Outbox) {
  const rows = (await runtimeOf(outbox).store.readEvents({})).slice(mark);
  return rows.map((e) => ({
    topic: e.name,
    key: e.orderingKey,
    payload: (typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload) as Record<
      string,
      unknown
    >,
  }));
}

for (const mode of MODES) {
  describeEachDialect(`change capture of upserts and increments, payload ${mode}`, (dialect) => {
    let db: TestDatabase;
    let outbox: Outbox;
    let Item: AnyModel;
    let Counter: AnyModel;
    let refuse = false;
    const lower = mode.toLowerCase();
    const name = `Item${mode[0]!.toUpperCase()}${mode.slice(1)}`;
    const t = (op: string) => `shop.${name.toLowerCase()}.${op}`;

    beforeAll(async () => {
      db = await dialect.open();
      const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
      Item = db.sequelize.define(
        name,
        {
          sku: { type: DataTypes.STRING, unique: true, allowNull: false },
          qty: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
          note: DataTypes.STRING,
        },
        { tableName: `items_${lower}`, timestamps: false, ...schema },
      );
      Counter = db.sequelize.define(
        `Counter${mode[0]!.toUpperCase()}${mode.slice(1)}`,
        { hits: { type: DataTypes.INTEGER, field: 'hit_count', defaultValue: 0 } },
        { tableName: `counters_${lower}`, timestamps: false, ...schema },
      );
      await Item.sync();
      await Counter.sync();
      const config = defineOutbox({
        events: {},
        capture: [
          capture(Item, { app: 'shop', payload: mode }),
          capture(Counter, { app: 'shop', payload: mode }),
        ],
        receivers: {
          'check.boom': receiver(t('updated'), {
            mode: 'inline',
            handle: () => {
              if (refuse) throw new Error('boom refused');
            },
          }),
        },
      });
      outbox = await openOutbox(db, config, { clock: testClock().now });
      installCapture(outbox, db.sequelize);
    });
    beforeEach(async () => {
      await Item.destroy({ where: {}, hooks: false });
      await markLog(outbox);
    });
    afterAll(async () => {
      await outbox.close();
      await db.cleanup();
    });

    /** The envelope the mode writes for one change. */
    function envelope(
      operation: string,
      pk: unknown,
      changed: string[] | null,
      before: Record<string, unknown> | null,
      after: Record<string, unknown> | null,
    ) {
      const e: Record<string, unknown> = { model: `shop.${name}`, operation, pk, changed };
      if (mode === 'after') {
        if (operation === 'deleted') e.before = before;
        else e.after = after;
      } else if (mode === 'beforeAndAfter') {
        e.before = before;
        e.after = after;
      }
      e.occurred_at = ISO;
      return e;
    }
    const event = (
      op: string,
      id: unknown,
      changed: string[] | null,
      before: Record<string, unknown> | null,
      after: Record<string, unknown> | null,
    ) => ({
      topic: t(op),
      key: `shop.${name}:${id}`,
      payload: envelope(op, id, changed, before, after),
    });
    async function seed(rows: Record<string, unknown>[]) {
      const made = await Item.bulkCreate(rows, { hooks: false });
      await markLog(outbox);
      return made.map((m) => m.get('id') as number);
    }
    const ids = async () =>
      Object.fromEntries(
        (await Item.findAll({ raw: true })).map((r) => [
          (r as unknown as { sku: string }).sku,
          (r as unknown as { id: number }).id,
        ]),
      ) as Record<string, number>;

    it('upsert of a new row writes an inserted event, of an existing one an updated event', async () => {
      const [a] = await seed([{ sku: 'a', qty: 1, note: 'old' }]);
      await Item.upsert({ sku: 'b', qty: 2, note: 'new' });
      await Item.upsert({ sku: 'a', qty: 5, note: 'old' });
      const b = (await ids()).b;
      expect(await logOf(outbox)).toEqual([
        event('inserted', b, null, null, { id: b, sku: 'b', qty: 2, note: 'new' }),
        event(
          'updated',
          a,
          ['sku', 'qty', 'note'],
          { id: a, sku: 'a', qty: 1, note: 'old' },
          { id: a, sku: 'a', qty: 5, note: 'old' },
        ),
      ]);
    });

    it('upsert by primary key updates the row of that key', async () => {
      const [a] = await seed([{ sku: 'a', qty: 1 }]);
      await Item.upsert({ id: a, sku: 'a', qty: 9 });
      expect(await logOf(outbox)).toEqual([
        event(
          'updated',
          a,
          ['id', 'sku', 'qty'],
          { id: a, sku: 'a', qty: 1, note: null },
          { id: a, sku: 'a', qty: 9, note: null },
        ),
      ]);
    });

    it('increment and decrement, static and instance, write updated events naming the fields', async () => {
      const [a, b] = await seed([
        { sku: 'a', qty: 1 },
        { sku: 'b', qty: 1 },
      ]);
      await Item.increment('qty', { by: 2, where: { sku: ['a', 'b'] } });
      const item = (await Item.findByPk(a))!;
      await item.decrement({ qty: 1 });
      await Item.decrement(['qty'], { where: { sku: 'b' } });
      await item.increment('qty');
      const row = (id: number, qty: number) => ({ id, sku: id === a ? 'a' : 'b', qty, note: null });
      const log = await logOf(outbox);
      expect(log.slice(0, 2).sort((x, y) => Number(x.payload.pk) - Number(y.payload.pk))).toEqual([
        event('updated', a, ['qty'], row(a!, 1), row(a!, 3)),
        event('updated', b, ['qty'], row(b!, 1), row(b!, 3)),
      ]);
      expect(log.slice(2)).toEqual([
        event('updated', a, ['qty'], row(a!, 3), row(a!, 2)),
        event('updated', b, ['qty'], row(b!, 3), row(b!, 2)),
        event('updated', a, ['qty'], row(a!, 2), row(a!, 3)),
      ]);
    });

    it('an increment costs its RETURNING on PostgreSQL (a read first only for beforeAndAfter), its columns read back by attribute', async () => {
      const [c1, c2] = await Counter.bulkCreate([{ hits: 1 }, { hits: 5 }]);
      await markLog(outbox);
      const statements = await capturingStatements(db.sequelize, async () => {
        await Counter.increment('hits', { by: 10, where: {} });
        await c1!.increment('hits');
      });
      const reads = statements.filter((s) => /SELECT/i.test(s) && s.includes(`counters_${lower}`));
      if (dialect.name === 'postgres') expect(reads.length).toBe(mode === 'beforeAndAfter' ? 2 : 0);
      else expect(reads.length).toBe(mode === 'keys' ? 2 : 4);
      const all = await logOf(outbox);
      // The static increment's two rows in key order (RETURNING has none), then the instance's.
      const log = [
        ...all.slice(0, 2).sort((x, y) => Number(x.payload.pk) - Number(y.payload.pk)),
        ...all.slice(2),
      ];
      const c = (id: unknown, hits: number) => ({ id, hits });
      expect(log.map((e) => [e.payload.pk, e.payload.changed])).toEqual([
        [c1!.get('id'), ['hits']],
        [c2!.get('id'), ['hits']],
        [c1!.get('id'), ['hits']],
      ]);
      if (mode !== 'keys') {
        expect(log.map((e) => e.payload.after)).toEqual([
          c(c1!.get('id'), 11),
          c(c2!.get('id'), 15),
          c(c1!.get('id'), 12),
        ]);
      }
      if (mode === 'beforeAndAfter') {
        expect(log.map((e) => e.payload.before)).toEqual([
          c(c1!.get('id'), 1),
          c(c2!.get('id'), 5),
          c(c1!.get('id'), 11),
        ]);
      }
      // A static update's RETURNING rows (raw, by column) are read back by attribute too.
      await markLog(outbox);
      expect(await Counter.update({ hits: 100 }, { where: { id: c2!.get('id') } })).toEqual([1]);
      const [updated] = await logOf(outbox);
      expect(updated!.payload.changed).toEqual(['hits']);
      if (mode !== 'keys') expect(updated!.payload.after).toEqual(c(c2!.get('id'), 100));
    });

    it('an increment whose event fails leaves the row as it was', async () => {
      const [a] = await seed([{ sku: 'a', qty: 1 }]);
      refuse = true;
      await expect(Item.increment('qty', { where: { id: a } })).rejects.toThrow('boom refused');
      refuse = false;
      expect((await Item.findByPk(a))!.get('qty')).toBe(1);
      expect(await logOf(outbox)).toEqual([]);
    });

    it('bulkCreate with updateOnDuplicate captures updated rows as updates and new rows as inserts', async () => {
      const [a] = await seed([{ sku: 'a', qty: 1, note: 'keep' }]);
      await Item.bulkCreate(
        [
          { sku: 'a', qty: 7, note: 'ignored' },
          { sku: 'c', qty: 3, note: 'fresh' },
        ],
        { updateOnDuplicate: ['qty'] },
      );
      const c = (await ids()).c;
      expect(await logOf(outbox)).toEqual([
        event('inserted', c, null, null, { id: c, sku: 'c', qty: 3, note: 'fresh' }),
        event(
          'updated',
          a,
          ['qty'],
          { id: a, sku: 'a', qty: 1, note: 'keep' },
          { id: a, sku: 'a', qty: 7, note: 'keep' },
        ),
      ]);
    });

    it('bulkCreate with ignoreDuplicates captures the inserted rows and the ignored ones not at all', async () => {
      await seed([{ sku: 'a', qty: 1 }]);
      await Item.bulkCreate(
        [
          { sku: 'a', qty: 7 },
          { sku: 'd', qty: 4 },
        ],
        { ignoreDuplicates: true },
      );
      const d = (await ids()).d;
      const log = await logOf(outbox);
      expect(log.map((e) => [e.topic, e.payload.pk])).toEqual([[t('inserted'), d]]);
      if (mode !== 'keys') {
        expect(log[0]!.payload.after).toEqual({ id: d, sku: 'd', qty: 4, note: null });
      }
    });

    it('a rollback of an upsert and an increment leaves neither change nor event', async () => {
      const [a] = await seed([{ sku: 'a', qty: 1 }]);
      const tx = await db.sequelize.transaction();
      await Item.upsert({ sku: 'z', qty: 1 }, { transaction: tx });
      await Item.increment('qty', { where: { id: a }, transaction: tx });
      await tx.rollback();
      expect(await Item.count()).toBe(1);
      expect((await Item.findByPk(a))!.get('qty')).toBe(1);
      expect(await logOf(outbox)).toEqual([]);
    });
  });
}
