/**
 * What capture keeps per statement: the rows a bulk statement reads first, an instance's
 * values before its destroy/restore, an upsert's records. Two writes in flight together —
 * on one model, of one outbox and of two — never see each other's, and Sequelize's per-row
 * hooks of a bulk statement are not captured a second time.
 */
import { DataTypes, type ModelStatic, type Model as SequelizeModel } from 'sequelize';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { capture, defineOutbox, installCapture, type Outbox } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;
type Payload = {
  pk: unknown;
  changed: string[] | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
};

describeEachDialect('capture keeps its state per statement', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox;
  let second: Outbox;
  let Card: AnyModel;
  let Pass: AnyModel;
  let Tag: AnyModel;
  let mark = 0;
  let markSecond = 0;

  async function logOf(of: Outbox, from: number) {
    const rows = (await runtimeOf(of).store.readEvents({})).slice(from);
    return rows.map((e) => ({
      topic: e.name,
      payload: (typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload) as Payload,
    }));
  }

  beforeAll(async () => {
    db = await dialect.open();
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    Card = db.sequelize.define(
      'StatementCard',
      {
        code: { type: DataTypes.STRING, unique: true },
        status: DataTypes.STRING,
        n: { type: DataTypes.INTEGER, defaultValue: 0 },
      },
      { tableName: 'statement_cards', timestamps: false, ...schema },
    );
    Pass = db.sequelize.define(
      'StatementPass',
      { status: DataTypes.STRING },
      {
        tableName: 'statement_passes',
        timestamps: true,
        createdAt: false,
        updatedAt: false,
        paranoid: true,
        ...schema,
      },
    );
    Tag = db.sequelize.define(
      'StatementTag',
      { code: DataTypes.STRING },
      { tableName: 'statement_tags', timestamps: false, ...schema },
    );
    // A hook of the user's that hands its options on to another write of the model.
    Tag.addHook('afterCreate', 'user:child', async (instance, options) => {
      if (instance.get('code') !== 'parent') return;
      await Tag.create({ code: 'child' }, { ...options, fields: undefined });
    });
    await Card.sync();
    await Pass.sync();
    await Tag.sync();
    const config = defineOutbox({
      events: {},
      capture: [
        capture(Card, { app: 'st', payload: 'beforeAndAfter' }),
        capture(Pass, { app: 'st', payload: 'beforeAndAfter' }),
        capture(Tag, { app: 'st' }),
      ],
      receivers: {},
    });
    outbox = await openOutbox(db, config, { clock: testClock().now });
    installCapture(outbox, db.sequelize);
    // A second outbox on the same Sequelize capturing the same models with another payload.
    const other = defineOutbox({
      events: {},
      capture: [capture(Card, { app: 'nd', payload: 'keys' })],
      receivers: {},
    });
    second = await openOutbox(db, other, { clock: testClock().now });
    installCapture(second, db.sequelize);
  });
  beforeEach(async () => {
    await Card.destroy({ where: {}, hooks: false });
    await Pass.destroy({ where: {}, hooks: false, force: true });
    await Tag.destroy({ where: {}, hooks: false });
    mark = (await runtimeOf(outbox).store.readEvents({})).length;
    markSecond = (await runtimeOf(second).store.readEvents({})).length;
  });
  afterAll(async () => {
    await second.close();
    await outbox.close();
    await db.cleanup();
  });

  it('bulkCreate with individualHooks writes each row once', async () => {
    await Card.bulkCreate(
      [
        { code: 'a', status: 'new' },
        { code: 'b', status: 'new' },
      ],
      { individualHooks: true },
    );
    const log = await logOf(outbox, mark);
    expect(log.map((e) => [e.topic, e.payload.after?.code])).toEqual([
      ['st.statementcard.inserted', 'a'],
      ['st.statementcard.inserted', 'b'],
    ]);
    expect((await logOf(second, markSecond)).map((e) => e.topic)).toEqual([
      'nd.statementcard.inserted',
      'nd.statementcard.inserted',
    ]);
  });

  it("a write a per-row hook hands the bulk statement's options to is still captured", async () => {
    await Tag.bulkCreate([{ code: 'parent' }, { code: 'other' }], { individualHooks: true });
    const log = await logOf(outbox, mark);
    expect(log.map((e) => e.payload.after?.code).sort()).toEqual(['child', 'other', 'parent']);
    expect(await Tag.count()).toBe(3);
  });

  it('two static updates in flight together each write their own rows, before and after', async () => {
    await Card.bulkCreate([
      { code: 'x1', status: 'x' },
      { code: 'x2', status: 'x' },
      { code: 'y1', status: 'y' },
    ]);
    mark = (await runtimeOf(outbox).store.readEvents({})).length;
    markSecond = (await runtimeOf(second).store.readEvents({})).length;
    await Promise.all([
      Card.update({ status: 'x!' }, { where: { status: 'x' } }),
      Card.update({ status: 'y!' }, { where: { status: 'y' } }),
    ]);
    const log = await logOf(outbox, mark);
    const seen = log
      .map((e) => [e.payload.before?.code, e.payload.before?.status, e.payload.after?.status])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(seen).toEqual([
      ['x1', 'x', 'x!'],
      ['x2', 'x', 'x!'],
      ['y1', 'y', 'y!'],
    ]);
    expect(await logOf(second, markSecond)).toHaveLength(3);
  });

  it('two upserts in flight together each tell their own outcome', async () => {
    await Card.create({ code: 'old', status: 'was' });
    mark = (await runtimeOf(outbox).store.readEvents({})).length;
    await Promise.all([
      Card.upsert({ code: 'old', status: 'is' }),
      Card.upsert({ code: 'new', status: 'fresh' }),
    ]);
    const log = await logOf(outbox, mark);
    const seen = log
      .map((e) => [e.topic, e.payload.before?.status ?? null, e.payload.after?.status])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(seen).toEqual([
      ['st.statementcard.inserted', null, 'fresh'],
      ['st.statementcard.updated', 'was', 'is'],
    ]);
  });

  it('two instance destroys and restores in flight together keep their own before-images', async () => {
    const [p, q] = await Pass.bulkCreate([{ status: 'p' }, { status: 'q' }]);
    mark = (await runtimeOf(outbox).store.readEvents({})).length;
    await Promise.all([p!.destroy(), q!.destroy()]);
    await Promise.all([p!.restore(), q!.restore()]);
    const log = await logOf(outbox, mark);
    expect(log).toHaveLength(4);
    for (const e of log) {
      expect(e.payload.changed).toEqual(['deletedAt']);
      expect(e.payload.before?.status).toBe(e.payload.after?.status);
    }
    const deletes = log.slice(0, 2);
    const restores = log.slice(2);
    expect(deletes.every((e) => e.payload.before?.deletedAt === null)).toBe(true);
    expect(deletes.every((e) => typeof e.payload.after?.deletedAt === 'string')).toBe(true);
    expect(restores.every((e) => typeof e.payload.before?.deletedAt === 'string')).toBe(true);
    expect(restores.every((e) => e.payload.after?.deletedAt === null)).toBe(true);
  });

  it('two increments in flight together each write their own rows', async () => {
    const [a, b] = await Card.bulkCreate([
      { code: 'i1', status: '1' },
      { code: 'i2', status: '2' },
    ]);
    mark = (await runtimeOf(outbox).store.readEvents({})).length;
    await Promise.all([
      Card.increment('n', { by: 1, where: { id: a!.get('id') } }),
      Card.increment('n', { by: 2, where: { id: b!.get('id') } }),
    ]);
    const log = await logOf(outbox, mark);
    const seen = log
      .map((e) => [e.payload.before?.code, e.payload.before?.n, e.payload.after?.n])
      .sort((x, y) => String(x[0]).localeCompare(String(y[0])));
    expect(seen).toEqual([
      ['i1', 0, 1],
      ['i2', 0, 2],
    ]);
  });
});
