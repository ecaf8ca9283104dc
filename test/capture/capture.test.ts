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

/** Every event in the log, oldest first, as topic, key and payload. */
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
  describeEachDialect(`change capture, payload ${mode}`, (dialect) => {
    let db: TestDatabase;
    let outbox: Outbox;
    let Order: AnyModel;
    let Loan: AnyModel;
    let Plain: AnyModel;
    let Ticket: AnyModel;
    const lower = mode.toLowerCase();
    let refuse = false;
    const o = (op: string) => `shop.order${lower}.${op}`;
    const l = (op: string) => `shop.loan${lower}.${op}`;

    beforeAll(async () => {
      db = await dialect.open();
      const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
      Order = db.sequelize.define(
        `Order${mode[0]!.toUpperCase()}${mode.slice(1)}`,
        { status: DataTypes.STRING, fee: DataTypes.DECIMAL(10, 2), secret: DataTypes.STRING },
        { tableName: `orders_${lower}`, ...schema },
      );
      Loan = db.sequelize.define(
        `Loan${mode[0]!.toUpperCase()}${mode.slice(1)}`,
        { status: DataTypes.STRING },
        { tableName: `loans_${lower}`, paranoid: true, ...schema },
      );
      Plain = db.sequelize.define(
        'Plain',
        { status: DataTypes.STRING },
        { tableName: `plain_${lower}`, ...schema },
      );
      Ticket = db.sequelize.define(
        `Ticket${mode[0]!.toUpperCase()}${mode.slice(1)}`,
        { status: DataTypes.STRING, n: DataTypes.INTEGER },
        {
          tableName: `tickets_${lower}`,
          timestamps: false,
          defaultScope: { where: { status: 'open' } },
          ...schema,
        },
      );
      await Promise.all([Order.sync(), Loan.sync(), Plain.sync(), Ticket.sync()]);
      const config = defineOutbox({
        events: {},
        capture: [
          capture(Order, { app: 'shop', payload: mode, exclude: ['secret'] }),
          capture(Loan, { app: 'shop', payload: mode, fields: ['id', 'status', 'deletedAt'] }),
          capture(Ticket, { app: 'shop', payload: mode }),
        ],
        receivers: {
          // An event that fails after its row is written: inline, in the write's transaction.
          'check.boom': receiver(o('inserted'), {
            mode: 'inline',
            handle: () => {
              if (refuse) throw new Error('boom refused');
            },
          }),
        },
      });
      outbox = await openOutbox(db, config, { clock: testClock().now });
      installCapture(outbox, db.sequelize);
      installCapture(outbox, db.sequelize); // idempotent
    });
    beforeEach(async () => {
      await Promise.all([
        Order.destroy({ where: {}, hooks: false, force: true }),
        Loan.destroy({ where: {}, hooks: false, force: true }),
        Ticket.unscoped().destroy({ where: {}, hooks: false }),
      ]);
      await markLog(outbox);
    });
    afterAll(async () => {
      await outbox.close();
      await db.cleanup();
    });

    function eventsTable(): string {
      return (runtimeOf(outbox).store as unknown as { t: { events: string } }).t.events;
    }

    /** The envelope a mode writes for one change. */
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
      e.occurred_at = ISO;
      return e;
    }
    const stamps = { createdAt: expect.any(String), updatedAt: expect.any(String) };
    const label = (m: AnyModel) => `shop.${m.name}`;

    it('create writes one inserted event, keyed {label}:{pk}, in the JSON form', async () => {
      const order = await Order.create({ status: 'new', fee: '2.50', secret: 's' });
      const id = order.get('id');
      expect(await logOf(outbox)).toEqual([
        {
          topic: o('inserted'),
          key: `${label(Order)}:${id}`,
          payload: envelope(label(Order), 'inserted', id, null, null, {
            id,
            status: 'new',
            fee: '2.50',
            ...stamps,
          }),
        },
      ]);
    });

    it('save of a changed instance and instance update write updated events naming the fields set', async () => {
      const order = await Order.create({ status: 'new', fee: '1.00' });
      const id = order.get('id');
      order.set('status', 'paid');
      await order.save();
      await order.update({ fee: '3.00' });
      const log = await logOf(outbox);
      expect(log.map((e) => e.topic)).toEqual([o('inserted'), o('updated'), o('updated')]);
      expect(log[1]!.payload).toEqual(
        envelope(
          label(Order),
          'updated',
          id,
          ['status'],
          { id, status: 'new', fee: '1.00', ...stamps },
          { id, status: 'paid', fee: '1.00', ...stamps },
        ),
      );
      expect(log[2]!.payload).toEqual(
        envelope(
          label(Order),
          'updated',
          id,
          ['fee'],
          { id, status: 'paid', fee: '1.00', ...stamps },
          { id, status: 'paid', fee: '3.00', ...stamps },
        ),
      );
      expect(log[2]!.key).toBe(`${label(Order)}:${id}`);
    });

    it('instance destroy writes a deleted event; a paranoid soft delete is an update of deletedAt, force a delete', async () => {
      const order = await Order.create({ status: 'gone', fee: '1.00' });
      const id = order.get('id');
      await order.destroy();
      const loan = await Loan.create({ status: 'lent' });
      const lid = loan.get('id');
      await loan.destroy();
      await loan.destroy({ force: true });
      const log = await logOf(outbox);
      expect(log.map((e) => e.topic)).toEqual([
        o('inserted'),
        o('deleted'),
        l('inserted'),
        l('updated'),
        l('deleted'),
      ]);
      expect(log[1]!.payload).toEqual(
        envelope(
          label(Order),
          'deleted',
          id,
          null,
          { id, status: 'gone', fee: '1.00', ...stamps },
          null,
        ),
      );
      expect(log[3]!.payload).toEqual(
        envelope(
          label(Loan),
          'updated',
          lid,
          ['deletedAt'],
          { id: lid, status: 'lent', deletedAt: null },
          { id: lid, status: 'lent', deletedAt: expect.any(String) },
        ),
      );
      expect((log[4]!.payload as { pk: unknown }).pk).toBe(lid);
    });

    it("bulkCreate writes every row's event in one fire, not one per row", async () => {
      let statements: string[] = [];
      statements = await capturingStatements(db.sequelize, () =>
        Order.bulkCreate([
          { status: 'a', fee: '1.00' },
          { status: 'b', fee: '2.00' },
          { status: 'c', fee: '3.00' },
        ]),
      );
      const log = await logOf(outbox);
      expect(log.map((e) => e.topic)).toEqual([o('inserted'), o('inserted'), o('inserted')]);
      expect(log.map((e) => (e.payload.after as { status?: string } | undefined)?.status)).toEqual(
        mode === 'keys' ? [undefined, undefined, undefined] : ['a', 'b', 'c'],
      );
      const pks = log.map((e) => e.payload.pk);
      expect(new Set(pks).size).toBe(3);
      expect(pks.every((pk) => typeof pk === 'number')).toBe(true);
      const eventInserts = statements.filter((s) => s.includes(eventsTable()) && /INSERT/i.test(s));
      expect(eventInserts.length).toBeLessThanOrEqual(2);
    });

    it('static update, with and without individualHooks, writes an updated event per matched row', async () => {
      const [a, b] = await Order.bulkCreate([
        { status: 'x', fee: '1.00' },
        { status: 'x', fee: '2.00' },
      ]);
      await Order.create({ status: 'other', fee: '9.00' });
      await markLog(outbox);
      await Order.update({ status: 'y' }, { where: { status: 'x' } });
      await Order.update({ fee: '5.00' }, { where: { status: 'y' }, individualHooks: true });
      const log = await logOf(outbox);
      expect(log.map((e) => e.topic)).toEqual([
        o('updated'),
        o('updated'),
        o('updated'),
        o('updated'),
      ]);
      const ids = [a!.get('id'), b!.get('id')];
      expect(log.map((e) => e.payload.pk).sort()).toEqual([...ids, ...ids].sort());
      expect(log.map((e) => e.payload.changed)).toEqual([['status'], ['status'], ['fee'], ['fee']]);
      if (mode !== 'keys') {
        expect((log[0]!.payload.after as { status: string }).status).toBe('y');
        expect((log[2]!.payload.after as { fee: string }).fee).toBe('5.00');
      }
      if (mode === 'beforeAndAfter') {
        expect((log[0]!.payload.before as { status: string }).status).toBe('x');
      }
    });

    it('static update costs what the mode adds: on PostgreSQL its RETURNING (a read first only for beforeAndAfter, locked), and returns what Sequelize returns', async () => {
      await Order.bulkCreate([
        { status: 'r', fee: '1.00' },
        { status: 'r', fee: '2.00' },
      ]);
      await markLog(outbox);
      let result: unknown;
      const statements = await capturingStatements(db.sequelize, async () => {
        result = await Order.update({ status: 's' }, { where: { status: 'r' } });
      });
      expect(result).toEqual([2]);
      const reads = statements.filter((s) => /SELECT/i.test(s) && s.includes(`orders_${lower}`));
      if (dialect.name === 'postgres') {
        expect(reads.length).toBe(mode === 'beforeAndAfter' ? 1 : 0);
        if (mode === 'beforeAndAfter') expect(reads[0]).toMatch(/FOR UPDATE/);
        expect(statements.some((s) => /UPDATE .* RETURNING "id"/.test(s))).toBe(true);
      } else {
        // SQLite: read first and (but for keys) re-read by key after.
        expect(reads.length).toBe(mode === 'keys' ? 1 : 2);
      }
      const log = await logOf(outbox);
      expect(log.map((e) => e.payload.changed)).toEqual([['status'], ['status']]);
      if (mode !== 'keys') {
        expect(log.map((e) => (e.payload.after as { status: string }).status)).toEqual(['s', 's']);
      }
      if (mode === 'beforeAndAfter') {
        expect(log.map((e) => (e.payload.before as { status: string }).status)).toEqual(['r', 'r']);
      }
      if (dialect.name === 'postgres') {
        const [, rows] = (await Order.update(
          { status: 't' },
          { where: { status: 's' }, returning: true },
        )) as unknown as [number, SequelizeModel[]];
        expect(rows.map((r) => r.get('status'))).toEqual(['t', 't']);
      }
    });

    it("a model's default scope: static update and increment capture the rows they wrote, also those the write moved out of the scope", async () => {
      const [open] = await Ticket.bulkCreate([
        { status: 'open', n: 1 },
        { status: 'done', n: 1 },
      ]);
      await markLog(outbox);
      await Ticket.increment('n', { where: {} }); // the scope: the open ticket only
      await Ticket.update({ status: 'closed' }, { where: {} });
      const log = await logOf(outbox);
      const t = (op: string) => `shop.ticket${lower}.${op}`;
      expect(log.map((e) => [e.topic, e.payload.pk, e.payload.changed])).toEqual([
        [t('updated'), open!.get('id'), ['n']],
        [t('updated'), open!.get('id'), ['status']],
      ]);
      if (mode !== 'keys') {
        expect(log.map((e) => e.payload.after)).toEqual([
          { id: open!.get('id'), status: 'open', n: 2 },
          { id: open!.get('id'), status: 'closed', n: 2 },
        ]);
      }
    });

    it("a static soft delete and restore cost their RETURNING on PostgreSQL (a read first only for beforeAndAfter), returning Sequelize's count", async () => {
      const [a, b] = await Loan.bulkCreate([{ status: 'soft' }, { status: 'soft' }]);
      await markLog(outbox);
      const results: unknown[] = [];
      const statements = await capturingStatements(db.sequelize, async () => {
        results.push(await Loan.destroy({ where: { status: 'soft' } }));
        results.push(await Loan.restore({ where: { status: 'soft' } }));
      });
      expect(results).toEqual([2, 2]);
      const reads = statements.filter((s) => /SELECT/i.test(s) && s.includes(`loans_${lower}`));
      if (dialect.name === 'postgres') {
        expect(reads.length).toBe(mode === 'beforeAndAfter' ? 2 : 0);
        expect(statements.filter((s) => /UPDATE .* RETURNING "id"/.test(s)).length).toBe(2);
      } else {
        expect(reads.length).toBe(mode === 'keys' ? 2 : 4);
      }
      const log = await logOf(outbox);
      const ids = [a!.get('id'), b!.get('id')];
      const sorted = (xs: typeof log) =>
        [...xs].sort((x, y) => Number(x.payload.pk) - Number(y.payload.pk));
      const [deletes, restores] = [sorted(log.slice(0, 2)), sorted(log.slice(2))];
      for (const batch of [deletes, restores]) {
        expect(batch.map((e) => [e.topic, e.payload.pk, e.payload.changed])).toEqual(
          ids.map((id) => [l('updated'), id, ['deletedAt']]),
        );
      }
      if (mode !== 'keys') {
        expect(deletes.map((e) => (e.payload.after as { deletedAt: unknown }).deletedAt)).toEqual([
          expect.any(String),
          expect.any(String),
        ]);
        expect(restores.map((e) => (e.payload.after as { deletedAt: unknown }).deletedAt)).toEqual([
          null,
          null,
        ]);
      }
      if (mode === 'beforeAndAfter') {
        expect(deletes.map((e) => (e.payload.before as { deletedAt: unknown }).deletedAt)).toEqual([
          null,
          null,
        ]);
      }
    });

    it('static destroy writes deleted events (paranoid: updated, force: deleted) and static restore updated ones', async () => {
      const order = await Order.create({ status: 'bye', fee: '1.00' });
      const loan = await Loan.create({ status: 'lent' });
      await markLog(outbox);
      await Order.destroy({ where: { status: 'bye' } });
      await Loan.destroy({ where: { status: 'lent' } });
      await Loan.restore({ where: { status: 'lent' } });
      await Loan.destroy({ where: { status: 'lent' }, force: true });
      const log = await logOf(outbox);
      expect(log.map((e) => e.topic)).toEqual([
        o('deleted'),
        l('updated'),
        l('updated'),
        l('deleted'),
      ]);
      expect(log[0]!.payload).toEqual(
        envelope(
          label(Order),
          'deleted',
          order.get('id'),
          null,
          mode === 'keys' ? null : { id: order.get('id'), status: 'bye', fee: '1.00', ...stamps },
          null,
        ),
      );
      expect(log.slice(1, 3).map((e) => e.payload.changed)).toEqual([['deletedAt'], ['deletedAt']]);
      if (mode !== 'keys') {
        expect((log[1]!.payload.after as { deletedAt: unknown }).deletedAt).toEqual(
          expect.any(String),
        );
        expect((log[2]!.payload.after as { deletedAt: unknown }).deletedAt).toBeNull();
      }
      expect(
        log.every((e) => e.key === `${label(log[0] === e ? Order : Loan)}:${e.payload.pk}`),
      ).toBe(true);
      expect(log[1]!.payload.pk).toBe(loan.get('id'));
    });

    it('findOrCreate captures its insert once, and a found row not at all', async () => {
      const [made, created] = await Order.findOrCreate({
        where: { status: 'unique' },
        defaults: { fee: '4.00' },
      });
      await Order.findOrCreate({ where: { status: 'unique' }, defaults: { fee: '4.00' } });
      expect(created).toBe(true);
      const log = await logOf(outbox);
      expect(log.map((e) => [e.topic, e.payload.pk])).toEqual([[o('inserted'), made.get('id')]]);
    });

    it('a rollback leaves neither row nor event', async () => {
      const t = await db.sequelize.transaction();
      await Order.create({ status: 'rolled', fee: '1.00' }, { transaction: t });
      await Order.bulkCreate([{ status: 'rolled', fee: '1.00' }], { transaction: t });
      await t.rollback();
      expect(await Order.count()).toBe(0);
      expect(await logOf(outbox)).toEqual([]);
    });

    it('a write outside any transaction whose event fails leaves no row', async () => {
      refuse = true;
      await expect(Order.create({ status: 'boom', fee: '1.00' })).rejects.toThrow('boom refused');
      refuse = false;
      expect(await Order.count()).toBe(0);
      expect(await logOf(outbox)).toEqual([]);
    });

    it("a failed event caught inside the caller's transaction undoes its own row (a savepoint), not the others", async () => {
      await db.sequelize.transaction(async (transaction) => {
        await Order.create({ status: 'kept', fee: '1.00' }, { transaction });
        refuse = true;
        await expect(
          Order.create({ status: 'boom', fee: '1.00' }, { transaction }),
        ).rejects.toThrow('boom refused');
        refuse = false;
        await Order.create({ status: 'kept too', fee: '1.00' }, { transaction });
      });
      const rows = await Order.findAll({ order: [['id', 'ASC']] });
      expect(rows.map((r) => r.get('status'))).toEqual(['kept', 'kept too']);
      const log = await logOf(outbox);
      expect(log.map((e) => e.payload.pk)).toEqual(rows.map((r) => r.get('id')));
    });

    it('a model without capture writes nothing and is not wrapped', async () => {
      await Plain.create({ status: 'free' });
      await Plain.update({ status: 'still free' }, { where: {} });
      await Plain.destroy({ where: {} });
      expect(await logOf(outbox)).toEqual([]);
      expect(Object.hasOwn(Plain, 'create')).toBe(false);
      expect(Object.hasOwn(Plain.prototype, 'save')).toBe(false);
    });
  });
}
