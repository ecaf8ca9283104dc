/**
 * When a captured write goes without its savepoint (src/capture/transaction.ts): an insert
 * (`create`, `save`, a plain `bulkCreate`) of a model whose capture runs nothing of the
 * user's after the row, in the caller's root transaction. A failure after its row then
 * dooms that transaction — its commit rolls back and rejects — so the row never commits
 * without its events. The events' statement is made to fail by a trigger on the events
 * table (a payload holding "boom"), a failure of outboxkit's own statement.
 */
import { DataTypes, type ModelStatic, type Model as SequelizeModel } from 'sequelize';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { capture, defineOutbox, installCapture, type Outbox, receiver } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { capturingStatements, openOutbox } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;

describeEachDialect('captured inserts without a savepoint', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox;
  let Quiet: AnyModel;
  let Hooked: AnyModel;
  let Loud: AnyModel;
  let hookFails = false;

  beforeAll(async () => {
    db = await dialect.open();
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    Quiet = db.sequelize.define(
      'Quiet',
      // A validation fails before the row is written: the transaction stays usable.
      { status: { type: DataTypes.STRING, validate: { notIn: [['invalid']] } } },
      { tableName: 'quiet', ...schema },
    );
    Hooked = db.sequelize.define(
      'Hooked',
      { status: DataTypes.STRING },
      {
        tableName: 'hooked',
        ...schema,
        hooks: {
          // The user's own after-hook: it could fail after the row, before its events.
          afterCreate: () => {
            if (hookFails) throw new Error('hook refused');
          },
        },
      },
    );
    Loud = db.sequelize.define(
      'Loud',
      { status: DataTypes.STRING },
      { tableName: 'loud', ...schema },
    );
    await Promise.all([Quiet.sync(), Hooked.sync(), Loud.sync()]);
    const config = defineOutbox({
      events: {},
      capture: [
        capture(Quiet, { app: 'sp' }),
        capture(Hooked, { app: 'sp' }),
        capture(Loud, { app: 'sp' }),
      ],
      receivers: {
        'sp.audit': receiver('sp.quiet.inserted', { deliver: async () => {} }),
        // An inline receiver runs the user's code after the row: Loud keeps its savepoint.
        'sp.inline': receiver('sp.loud.inserted', { mode: 'inline', handle: () => {} }),
      },
    });
    outbox = await openOutbox(db, config);
    installCapture(outbox);
    const events = (runtimeOf(outbox).store as unknown as { t: { events: string } }).t.events;
    if (dialect.name === 'postgres') {
      const fn = `${events.replace(/"/g, '').replace('.', '_')}_boom`;
      await db.sequelize.query(
        `CREATE FUNCTION "${fn}"() RETURNS trigger AS $$ BEGIN IF NEW.payload::text LIKE '%boom%' THEN RAISE EXCEPTION 'boom trigger'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`,
      );
      await db.sequelize.query(
        `CREATE TRIGGER boom BEFORE INSERT ON ${events} FOR EACH ROW EXECUTE FUNCTION "${fn}"()`,
      );
    } else if (dialect.name === 'mariadb' || dialect.name === 'mysql') {
      await db.sequelize.query(
        `CREATE TRIGGER boom BEFORE INSERT ON ${events} FOR EACH ROW BEGIN IF NEW.payload LIKE '%boom%' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'boom trigger'; END IF; END`,
      );
    } else {
      await db.sequelize.query(
        `CREATE TRIGGER boom BEFORE INSERT ON ${events} WHEN NEW.payload LIKE '%boom%' BEGIN SELECT RAISE(ABORT, 'boom trigger'); END`,
      );
    }
  });
  beforeEach(async () => {
    hookFails = false;
    await Promise.all(
      [Quiet, Hooked, Loud].map((m) => m.destroy({ where: {}, hooks: false, force: true })),
    );
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  const topics = async () =>
    (await runtimeOf(outbox).store.readEvents({}))
      .map((e) => e.name)
      .filter((n) => n.startsWith('sp.'));
  const savepoints = (statements: string[]) => statements.filter((s) => /SAVEPOINT/i.test(s));

  it('a quiet create, save and bulkCreate in a transaction write no savepoint, and their events', async () => {
    const before = (await topics()).length;
    const statements = await capturingStatements(db.sequelize, () =>
      db.sequelize.transaction(async (transaction) => {
        await Quiet.create({ status: 'a' }, { transaction });
        await Quiet.build({ status: 'b' }).save({ transaction });
        await Quiet.bulkCreate([{ status: 'c' }, { status: 'd' }], { transaction });
      }),
    );
    expect(savepoints(statements)).toEqual([]);
    expect(await Quiet.count()).toBe(4);
    expect((await topics()).slice(before)).toEqual(Array(4).fill('sp.quiet.inserted'));
  });

  it('a model with an inline receiver, or an after-hook of its own, keeps its savepoint', async () => {
    const statements = await capturingStatements(db.sequelize, () =>
      db.sequelize.transaction(async (transaction) => {
        await Loud.create({ status: 'a' }, { transaction });
        await Hooked.create({ status: 'b' }, { transaction });
      }),
    );
    expect(savepoints(statements).length).toBe(2);
  });

  it("a quiet create whose events fail dooms the caller's transaction: caught, it still cannot commit the row", async () => {
    const before = (await topics()).length;
    await expect(
      db.sequelize.transaction(async (transaction) => {
        await Quiet.create({ status: 'kept?' }, { transaction });
        await expect(Quiet.create({ status: 'boom' }, { transaction })).rejects.toThrow();
      }),
    ).rejects.toThrow(/rolled back instead of committed/);
    expect(await Quiet.count()).toBe(0);
    expect((await topics()).length).toBe(before);
  });

  it('a quiet bulkCreate whose events fail dooms the transaction an unmanaged caller commits', async () => {
    const before = (await topics()).length;
    const t = await db.sequelize.transaction();
    await expect(
      Quiet.bulkCreate([{ status: 'ok' }, { status: 'boom' }], { transaction: t }),
    ).rejects.toThrow();
    await expect(t.commit()).rejects.toThrow(/rolled back instead of committed/);
    expect(await Quiet.count()).toBe(0);
    expect((await topics()).length).toBe(before);
  });

  it('a quiet write outside any transaction, or through findOrCreate, whose events fail leaves no row', async () => {
    await expect(Quiet.create({ status: 'boom' })).rejects.toThrow();
    await expect(Quiet.findOrCreate({ where: { status: 'boom' } })).rejects.toThrow();
    expect(await Quiet.count()).toBe(0);
  });

  it('a failure before the row (the caller catches it) leaves the transaction usable', async () => {
    await db.sequelize.transaction(async (transaction) => {
      await expect(Quiet.create({ status: 'invalid' }, { transaction })).rejects.toThrow(
        /Validation/,
      );
      await Quiet.create({ status: 'kept' }, { transaction });
    });
    expect((await Quiet.findAll()).map((r) => r.get('status'))).toEqual(['kept']);
  });

  it("with a failing after-hook of the user's, the savepoint undoes only that write", async () => {
    await db.sequelize.transaction(async (transaction) => {
      hookFails = true;
      await expect(Hooked.create({ status: 'gone' }, { transaction })).rejects.toThrow(
        'hook refused',
      );
      hookFails = false;
      await Hooked.create({ status: 'kept' }, { transaction });
    });
    expect((await Hooked.findAll()).map((r) => r.get('status'))).toEqual(['kept']);
  });
});
