/**
 * What a delete reaches through foreign keys is captured: `hooks: true` children through
 * their own hooks, the database's `ON DELETE CASCADE` as `deleted` and its `SET NULL` as
 * `updated` (rows read before the delete), level after level, from captured and uncaptured
 * parents alike — every payload mode, both dialects.
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
import { openOutbox, T0, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;
const MODES: readonly CapturePayload[] = ['keys', 'after', 'beforeAndAfter'];

let mark = 0;
async function markLog(outbox: Outbox) {
  mark = (await runtimeOf(outbox).store.readEvents({})).length;
}
/** The events since the mark as [topic, pk], sorted (one write's events have no fixed order). */
async function logOf(outbox: Outbox) {
  const rows = (await runtimeOf(outbox).store.readEvents({})).slice(mark);
  return rows
    .map((e) => ({
      topic: e.name,
      key: e.orderingKey,
      payload: (typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload) as Record<
        string,
        unknown
      >,
    }))
    .sort((a, b) =>
      a.topic === b.topic
        ? String(a.payload.pk).localeCompare(String(b.payload.pk), undefined, { numeric: true })
        : a.topic.localeCompare(b.topic),
    );
}
const brief = (log: Awaited<ReturnType<typeof logOf>>) =>
  log.map((e) => [e.topic, e.payload.pk] as const);

for (const mode of MODES) {
  describeEachDialect(`change capture of cascades, payload ${mode}`, (dialect) => {
    let db: TestDatabase;
    let outbox: Outbox;
    let refuse = false;
    const m: Record<string, AnyModel> = {};

    beforeAll(async () => {
      db = await dialect.open();
      const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
      const plain = { timestamps: false, ...schema };
      const def = (name: string, table: string, extra: object = plain) =>
        db.sequelize.define(name, { label: DataTypes.STRING }, { tableName: table, ...extra });
      m.Customer = def('Customer', 'customers');
      m.Order = def('Order', 'orders');
      m.Line = def('Line', 'lines');
      m.Note = def('Note', 'notes');
      m.Tag = def('Tag', 'tags');
      m.Box = def('Box', 'boxes');
      m.Item = def('Item', 'items');
      m.SoftLine = def('SoftLine', 'soft_lines', { paranoid: true, ...schema });
      m.Category = def('Category', 'categories');
      m.Shelf = def('Shelf', 'shelves', { paranoid: true, ...schema });
      m.Book = def('Book', 'books');
      m.Album = def('Album', 'albums');
      m.Photo = def('Photo', 'photos', { ...plain, defaultScope: { where: { label: 'shown' } } });
      m.Book.belongsTo(m.Shelf, {
        foreignKey: { name: 'shelfId', allowNull: true },
        onDelete: 'CASCADE',
      });
      const fk = (name: string) => ({ name, allowNull: true });
      m.Album.hasMany(m.Photo, { foreignKey: fk('albumId'), onDelete: 'CASCADE' });
      m.Customer.hasMany(m.Order, { foreignKey: fk('customerId'), onDelete: 'CASCADE' });
      m.Order.hasMany(m.Line, { foreignKey: fk('orderId'), onDelete: 'CASCADE', hooks: true });
      m.Order.hasMany(m.Note, { foreignKey: fk('orderId'), onDelete: 'CASCADE' });
      // hooks: true does nothing for SET NULL (Sequelize cascades only deletes): the database does it.
      m.Order.hasMany(m.Tag, { foreignKey: fk('orderId'), onDelete: 'SET NULL', hooks: true });
      m.Order.hasMany(m.Box, { foreignKey: fk('orderId'), onDelete: 'CASCADE' });
      m.Box.hasMany(m.Item, { foreignKey: fk('boxId'), onDelete: 'CASCADE' });
      m.Order.hasMany(m.SoftLine, {
        foreignKey: fk('orderId'),
        onDelete: 'CASCADE',
        hooks: true,
      });
      m.Category.hasMany(m.Category, {
        as: 'children',
        foreignKey: fk('parentId'),
        onDelete: 'CASCADE',
      });
      for (const name of ['Customer', 'Order', 'Line', 'Note', 'Tag', 'Box', 'Item']) {
        await m[name]!.sync();
      }
      await m.SoftLine!.sync();
      await m.Category!.sync();
      await m.Shelf!.sync();
      await m.Book!.sync();
      await m.Album!.sync();
      await m.Photo!.sync();
      const captured = ['Order', 'Line', 'Note', 'Tag', 'Item', 'Category', 'Book', 'Photo'].map(
        (name) => capture(m[name]!, { app: 'shop', payload: mode }),
      );
      captured.push(
        capture(m.SoftLine!, {
          app: 'shop',
          payload: mode,
          fields: ['id', 'orderId', 'deletedAt'],
        }),
      );
      const config = defineOutbox({
        events: {},
        capture: captured,
        receivers: {
          // An event that fails after the cascade's rows are gone: inline, in the transaction.
          'check.boom': receiver('shop.note.deleted', {
            mode: 'inline',
            handle: () => {
              if (refuse) throw new Error('boom refused');
            },
          }),
        },
      });
      outbox = await openOutbox(db, config, { clock: testClock().now });
      installCapture(outbox, db.sequelize);
      installCapture(outbox, db.sequelize); // idempotent: no hook twice
    });
    beforeEach(async () => {
      for (const name of ['Item', 'Box', 'Line', 'Note', 'Tag', 'SoftLine', 'Order', 'Customer']) {
        await m[name]!.destroy({ where: {}, hooks: false, force: true });
      }
      await m.Category!.destroy({ where: {}, hooks: false });
      await m.Book!.destroy({ where: {}, hooks: false });
      await m.Shelf!.destroy({ where: {}, hooks: false, force: true });
    });
    afterAll(async () => {
      await outbox.close();
      await db.cleanup();
    });

    /** An order with rows under each of its foreign keys; the log marked after. */
    async function anOrder(customerId: number | null = null) {
      const order = await m.Order!.create({ label: 'o', customerId });
      const orderId = order.get('id') as number;
      const lines = await m.Line!.bulkCreate([
        { label: 'l1', orderId },
        { label: 'l2', orderId },
      ]);
      const note = await m.Note!.create({ label: 'n', orderId });
      const tag = await m.Tag!.create({ label: 't', orderId });
      const box = await m.Box!.create({ label: 'b', orderId });
      const items = await m.Item!.bulkCreate([
        { label: 'i1', boxId: box.get('id') },
        { label: 'i2', boxId: box.get('id') },
      ]);
      const soft = await m.SoftLine!.create({ label: 's', orderId });
      await markLog(outbox);
      const id = (r: SequelizeModel) => r.get('id') as number;
      return {
        order,
        orderId,
        lineIds: lines.map(id),
        noteId: id(note),
        tagId: id(tag),
        itemIds: items.map(id),
        softId: id(soft),
      };
    }

    /** The envelope of a change under this mode. */
    function envelope(
      model: string,
      operation: string,
      pk: unknown,
      changed: string[] | null,
      before: Record<string, unknown> | null,
      after: Record<string, unknown> | null,
    ) {
      const e: Record<string, unknown> = { model, operation, pk, changed };
      if (mode === 'after') {
        if (operation === 'deleted') e.before = before;
        else e.after = after;
      } else if (mode === 'beforeAndAfter') {
        e.before = before;
        e.after = after;
      }
      e.occurred_at = T0.toISOString();
      return e;
    }

    async function expectRowsGone(o: Awaited<ReturnType<typeof anOrder>>) {
      expect(await m.Line!.count()).toBe(0);
      expect(await m.Note!.count()).toBe(0);
      expect(await m.Item!.count()).toBe(0);
      expect(await m.SoftLine!.count({ paranoid: false })).toBe(0);
      const tag = await m.Tag!.findByPk(o.tagId);
      expect(tag?.get('orderId')).toBeNull();
    }

    it('an instance destroy captures its hooks: true children through their hooks, the database CASCADE as deleted and SET NULL as updated, through an uncaptured model too', async () => {
      const o = await anOrder();
      await o.order.destroy();
      const log = await logOf(outbox);
      expect(brief(log)).toEqual([
        ['shop.item.deleted', o.itemIds[0]],
        ['shop.item.deleted', o.itemIds[1]],
        ['shop.line.deleted', o.lineIds[0]],
        ['shop.line.deleted', o.lineIds[1]],
        ['shop.note.deleted', o.noteId],
        ['shop.order.deleted', o.orderId],
        // paranoid: Sequelize's hooks soft-delete it, then the database's cascade deletes it
        ['shop.softline.deleted', o.softId],
        ['shop.softline.updated', o.softId],
        ['shop.tag.updated', o.tagId],
      ]);
      const note = log.find((e) => e.topic === 'shop.note.deleted')!;
      expect(note.key).toBe(`shop.Note:${o.noteId}`);
      expect(note.payload).toEqual(
        envelope(
          'shop.Note',
          'deleted',
          o.noteId,
          null,
          { id: o.noteId, label: 'n', orderId: o.orderId },
          null,
        ),
      );
      expect(log.find((e) => e.topic === 'shop.tag.updated')!.payload).toEqual(
        envelope(
          'shop.Tag',
          'updated',
          o.tagId,
          ['orderId'],
          { id: o.tagId, label: 't', orderId: o.orderId },
          { id: o.tagId, label: 't', orderId: null },
        ),
      );
      await expectRowsGone(o);
    });

    it('a static destroy captures the rows the database cascade deletes, hooks: true children included (Sequelize runs no hooks for them)', async () => {
      const o = await anOrder();
      await m.Order!.destroy({ where: { id: o.orderId } });
      expect(brief(await logOf(outbox))).toEqual([
        ['shop.item.deleted', o.itemIds[0]],
        ['shop.item.deleted', o.itemIds[1]],
        ['shop.line.deleted', o.lineIds[0]],
        ['shop.line.deleted', o.lineIds[1]],
        ['shop.note.deleted', o.noteId],
        ['shop.order.deleted', o.orderId],
        ['shop.softline.deleted', o.softId],
        ['shop.tag.updated', o.tagId],
      ]);
      await expectRowsGone(o);
    });

    it("an uncaptured parent's delete captures what its cascade reaches, level after level; only its destroy is wrapped", async () => {
      const customer = await m.Customer!.create({ label: 'c' });
      const o = await anOrder(customer.get('id') as number);
      await customer.destroy();
      expect(brief(await logOf(outbox))).toEqual([
        ['shop.item.deleted', o.itemIds[0]],
        ['shop.item.deleted', o.itemIds[1]],
        ['shop.line.deleted', o.lineIds[0]],
        ['shop.line.deleted', o.lineIds[1]],
        ['shop.note.deleted', o.noteId],
        ['shop.order.deleted', o.orderId],
        ['shop.softline.deleted', o.softId],
        ['shop.tag.updated', o.tagId],
      ]);
      await expectRowsGone(o);
      expect(Object.hasOwn(m.Customer!, 'destroy')).toBe(true);
      expect(Object.hasOwn(m.Customer!, 'create')).toBe(false);
      expect(Object.hasOwn(m.Customer!.prototype, 'save')).toBe(false);
    });

    it('a self-referencing cascade captures the whole subtree, each row once', async () => {
      const root = await m.Category!.create({ label: 'root' });
      const a = await m.Category!.create({ label: 'a', parentId: root.get('id') });
      const b = await m.Category!.create({ label: 'b', parentId: a.get('id') });
      const c = await m.Category!.create({ label: 'c', parentId: b.get('id') });
      const other = await m.Category!.create({ label: 'other' });
      await markLog(outbox);
      await m.Category!.destroy({ where: { id: [root.get('id'), a.get('id')] } });
      expect(brief(await logOf(outbox))).toEqual(
        [root, a, b, c].map((r) => ['shop.category.deleted', r.get('id')]),
      );
      expect(await m.Category!.count()).toBe(1);
      expect((await m.Category!.findOne())?.get('id')).toBe(other.get('id'));
    });

    it('a rolled back destroy leaves every row it reached and no event', async () => {
      const o = await anOrder();
      const t = await db.sequelize.transaction();
      await o.order.destroy({ transaction: t });
      await t.rollback();
      expect(await logOf(outbox)).toEqual([]);
      expect(await m.Line!.count()).toBe(2);
      expect(await m.Item!.count()).toBe(2);
      expect((await m.Tag!.findByPk(o.tagId))?.get('orderId')).toBe(o.orderId);
    });

    it("a cascaded row's failing event undoes the whole delete in its savepoint, even when the caller catches it", async () => {
      const o = await anOrder();
      await db.sequelize.transaction(async (transaction) => {
        refuse = true;
        await expect(o.order.destroy({ transaction })).rejects.toThrow('boom refused');
        refuse = false;
        await m.Tag!.update({ label: 'kept' }, { where: { id: o.tagId }, transaction });
      });
      expect(await m.Order!.count()).toBe(1);
      expect(await m.Note!.count()).toBe(1);
      expect(await m.Line!.count()).toBe(2);
      const tag = await m.Tag!.findByPk(o.tagId);
      expect([tag?.get('label'), tag?.get('orderId')]).toEqual(['kept', o.orderId]);
      expect(brief(await logOf(outbox))).toEqual([['shop.tag.updated', o.tagId]]);
    });

    it('a static destroy with individualHooks captures each reached row once', async () => {
      const o = await anOrder();
      await m.Order!.destroy({ where: { id: o.orderId }, individualHooks: true });
      expect(brief(await logOf(outbox))).toEqual([
        ['shop.item.deleted', o.itemIds[0]],
        ['shop.item.deleted', o.itemIds[1]],
        ['shop.line.deleted', o.lineIds[0]],
        ['shop.line.deleted', o.lineIds[1]],
        ['shop.note.deleted', o.noteId],
        ['shop.order.deleted', o.orderId],
        ['shop.softline.deleted', o.softId],
        ['shop.tag.updated', o.tagId],
      ]);
    });

    it("a paranoid parent's soft delete cascades nothing; its forced delete cascades (a belongsTo's onDelete)", async () => {
      const shelf = await m.Shelf!.create({ label: 's' });
      const book = await m.Book!.create({ label: 'b', shelfId: shelf.get('id') });
      await markLog(outbox);
      await shelf.destroy();
      await m.Shelf!.destroy({ where: { id: shelf.get('id') } });
      expect(await logOf(outbox)).toEqual([]);
      expect(await m.Book!.count()).toBe(1);
      await shelf.destroy({ force: true });
      expect(brief(await logOf(outbox))).toEqual([['shop.book.deleted', book.get('id')]]);
      expect(await m.Book!.count()).toBe(0);
    });

    it("the database's cascade reaches rows out of a model's default scope, and so does capture", async () => {
      const album = await m.Album!.create({ label: 'a' });
      const photos = await m.Photo!.bulkCreate([
        { label: 'shown', albumId: album.get('id') },
        { label: 'hidden', albumId: album.get('id') },
      ]);
      await markLog(outbox);
      await album.destroy();
      expect(brief(await logOf(outbox))).toEqual(
        photos.map((p) => ['shop.photo.deleted', p.get('id')]),
      );
      expect(await m.Photo!.unscoped().count()).toBe(0);
    });
  });
}
