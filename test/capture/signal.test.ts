/**
 * A captured write wakes the relays as `fire()` does (src/fire/after-commit.ts): one signal
 * per transaction, after it commits, naming the topics durable receivers are owed — on
 * capture's path that builds no `FiredEvent` (`fireUnanswered`, a durable receiver only)
 * and on the one that does (an inline receiver runs in the write's transaction) alike —
 * and none for a rollback.
 */
import { DataTypes, type ModelStatic, type Model as SequelizeModel } from 'sequelize';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { capture, defineOutbox, installCapture, type Outbox, receiver } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { recordingWakeup } from '../fire/support.js';
import { openOutbox } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;

describeEachDialect('captured writes signal the wakeup after commit', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox;
  let Durable: AnyModel;
  let Inline: AnyModel;
  const wakeup = recordingWakeup();

  beforeAll(async () => {
    db = await dialect.open();
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    Durable = db.sequelize.define(
      'Durable',
      { status: DataTypes.STRING },
      { tableName: 'signal_durable', ...schema },
    );
    Inline = db.sequelize.define(
      'Inline',
      { status: DataTypes.STRING },
      { tableName: 'signal_inline', ...schema },
    );
    await Promise.all([Durable.sync(), Inline.sync()]);
    const config = defineOutbox({
      events: {},
      capture: [capture(Durable, { app: 'sig' }), capture(Inline, { app: 'sig' })],
      receivers: {
        'sig.audit': receiver('sig.durable.inserted', { deliver: async () => {} }),
        'sig.inline': receiver('sig.inline.inserted', { mode: 'inline', handle: () => {} }),
        'sig.inlineAudit': receiver('sig.inline.inserted', { deliver: async () => {} }),
      },
    });
    outbox = await openOutbox(db, config, { wakeup });
    installCapture(outbox);
  });
  beforeEach(() => {
    wakeup.signals.length = 0;
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  it('a captured bulkCreate of a model with only durable receivers signals its topic once, after the commit', async () => {
    await db.sequelize.transaction(async (transaction) => {
      await Durable.bulkCreate([{ status: 'a' }, { status: 'b' }], { transaction });
      expect(wakeup.signals).toEqual([]);
    });
    expect(wakeup.signals).toEqual([['sig.durable.inserted']]);
  });

  it('a captured write with an inline receiver signals the same way', async () => {
    await db.sequelize.transaction(async (transaction) => {
      await Inline.create({ status: 'c' }, { transaction });
      await Durable.create({ status: 'd' }, { transaction });
      expect(wakeup.signals).toEqual([]);
    });
    expect(wakeup.signals).toEqual([['sig.inline.inserted', 'sig.durable.inserted']]);
  });

  it('a captured write whose transaction rolls back signals nothing', async () => {
    await expect(
      db.sequelize.transaction(async (transaction) => {
        await Durable.create({ status: 'e' }, { transaction });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(wakeup.signals).toEqual([]);
  });
});
