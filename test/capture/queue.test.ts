/**
 * Captured writes started together: on one transaction they run one after the other (a
 * connection runs one statement at a time; interleaved savepoints would release each
 * other), on SQLite the transactions opened for them too (one writer at a time), and a
 * write started from inside another's run on its transaction is not queued behind it.
 */
import {
  DataTypes,
  type ModelStatic,
  type Model as SequelizeModel,
  type Transaction,
} from 'sequelize';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { capture, defineOutbox, installCapture, type Outbox, receiver } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;

describeEachDialect('captured writes started together', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox;
  let Doc: AnyModel;
  let Note: AnyModel;
  /** The caller's transaction an extension writes a note in (no CLS: it is handed over). */
  let sideTransaction: Transaction | undefined;

  beforeAll(async () => {
    db = await dialect.open();
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    const plain = { timestamps: false, ...schema };
    Doc = db.sequelize.define('Doc', { title: DataTypes.STRING }, plain);
    Note = db.sequelize.define('Note', { text: DataTypes.STRING }, plain);
    await Doc.sync();
    await Note.sync();
    const config = defineOutbox({
      events: {},
      capture: [
        capture(Doc, {
          app: 'q',
          extend: async (change) => {
            if (sideTransaction) {
              await Note.create({ text: `for ${change.pk}` }, { transaction: sideTransaction });
            }
            return undefined;
          },
        }),
        capture(Note, { app: 'q' }),
      ],
      receivers: {
        'check.boom': receiver('q.doc.inserted', {
          mode: 'inline',
          handle: (event) => {
            if ((event.payload as { after?: { title?: string } }).after?.title === 'boom') {
              throw new Error('boom refused');
            }
          },
        }),
      },
    });
    outbox = await openOutbox(db, config, { clock: testClock().now });
    installCapture(outbox, db.sequelize);
  });
  beforeEach(async () => {
    sideTransaction = undefined;
    await Doc.destroy({ where: {}, hooks: false });
    await Note.destroy({ where: {}, hooks: false });
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  const topics = async () =>
    (await runtimeOf(outbox).store.readEvents({})).map((e) => e.name).sort();
  let before: string[] = [];
  beforeEach(async () => {
    before = await topics();
  });
  /** How many events were written since the test began. */
  const since = async () => (await topics()).length - before.length;

  it('writes started together in one transaction all land, each with its event; a failing one undoes only itself', async () => {
    await db.sequelize.transaction(async (transaction) => {
      const results = await Promise.allSettled(
        ['a', 'b', 'boom', 'c', 'd'].map((title) => Doc.create({ title }, { transaction })),
      );
      expect(results.map((r) => r.status)).toEqual([
        'fulfilled',
        'fulfilled',
        'rejected',
        'fulfilled',
        'fulfilled',
      ]);
    });
    const titles = (await Doc.findAll()).map((d) => d.get('title')).sort();
    expect(titles).toEqual(['a', 'b', 'c', 'd']);
    expect(await since()).toBe(4);
  });

  it('writes started together outside any transaction all land, each with its event', async () => {
    await Promise.all(['a', 'b', 'c', 'd'].map((title) => Doc.create({ title })));
    expect(await Doc.count()).toBe(4);
    expect(await since()).toBe(4);
  });

  it("an extension's write in the caller's transaction runs inside the write, not queued behind it", async () => {
    await db.sequelize.transaction(async (transaction) => {
      sideTransaction = transaction;
      await Promise.all([
        Doc.create({ title: 'x' }, { transaction }),
        Doc.create({ title: 'y' }, { transaction }),
      ]);
      sideTransaction = undefined;
    });
    expect(await Note.count()).toBe(2);
    expect(await since()).toBe(4);
  });
});
