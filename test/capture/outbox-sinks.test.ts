import { DataTypes, type ModelStatic, type Model as SequelizeModel } from 'sequelize';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type ChangeSink,
  ConfigurationError,
  capture,
  defineOutbox,
  installCapture,
  type Outbox,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox, tableName, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;

describeEachDialect(
  'capture: an outbox-wide change sink (defineOutbox({ sinks })), handed every capture’s changes',
  (dialect) => {
    let db: TestDatabase;
    let outbox: Outbox;
    let Account: AnyModel;
    let Memo: AnyModel;
    let audit: string;
    let refuse = false;
    const calls: string[] = [];

    /** The outbox-wide audit trail: one row per change of any captured model, in the write's transaction. */
    const auditTrail: ChangeSink = {
      name: 'auditTrail',
      async write(changes, { transaction, label }) {
        calls.push(`auditTrail ${label} ${changes.length}`);
        for (const c of changes) {
          await db.sequelize.query(
            `INSERT INTO ${audit} (label, operation, pk, status) VALUES (?, ?, ?, ?)`,
            {
              replacements: [
                label,
                c.operation,
                String(c.pk),
                (c.after?.status as string | undefined) ?? null,
              ],
              transaction,
            },
          );
        }
        if (refuse) throw new Error('audit store refused');
      },
    };
    /** A capture's own sink, to see the order. */
    const projection: ChangeSink = {
      name: 'projection',
      write(changes, { label }) {
        calls.push(`projection ${label} ${changes.length}`);
      },
    };

    beforeAll(async () => {
      db = await dialect.open();
      const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
      audit = tableName(db, 'wide_audit');
      await db.sequelize.query(
        `CREATE TABLE ${audit} (label varchar(100), operation varchar(20), pk varchar(40), status varchar(40))`,
      );
      Account = db.sequelize.define(
        'Account',
        { status: DataTypes.STRING },
        { tableName: 'wide_accounts', timestamps: false, ...schema },
      );
      Memo = db.sequelize.define(
        'Memo',
        { status: DataTypes.STRING },
        { tableName: 'wide_memos', timestamps: false, ...schema },
      );
      await Promise.all([Account.sync(), Memo.sync()]);
      outbox = await openOutbox(
        db,
        defineOutbox({
          events: {},
          sinks: [auditTrail],
          capture: [
            capture(Account, { app: 'bank', sink: projection }),
            // No sink of its own and no events: the outbox-wide sink is what it feeds.
            capture(Memo, { outbox: false }),
          ],
        }),
        { clock: testClock().now },
      );
      installCapture(outbox);
    });
    beforeEach(async () => {
      refuse = false;
      calls.length = 0;
      await db.sequelize.query(`DELETE FROM ${audit}`);
    });
    afterAll(async () => {
      await outbox.close();
      await db.cleanup();
    });

    const auditRows = async () =>
      (
        (await db.sequelize.query(
          `SELECT label, operation, pk, status FROM ${audit} ORDER BY label, operation, pk`,
          { type: 'SELECT' },
        )) as Record<string, unknown>[]
      ).map((r) => `${r.label} ${r.operation} ${r.pk} ${r.status ?? '-'}`);
    const events = async () => (await runtimeOf(outbox).store.readEvents({})).map((e) => e.name);

    it('every capture hands its changes to the outbox-wide sink, before its own sinks, beside its events', async () => {
      const before = (await events()).length;
      const account = await Account.create({ status: 'open' });
      await Account.bulkCreate([{ status: 'a' }, { status: 'b' }]);
      const memo = await Memo.create({ status: 'draft' });
      expect(calls).toEqual([
        'auditTrail bank.Account 1',
        'projection bank.Account 1',
        'auditTrail bank.Account 2',
        'projection bank.Account 2',
        'auditTrail Memo 1',
      ]);
      expect(await auditRows()).toEqual([
        'Memo inserted 1 draft',
        `bank.Account inserted ${account.get('id')} open`,
        expect.stringMatching(/^bank\.Account inserted \d+ a$/),
        expect.stringMatching(/^bank\.Account inserted \d+ b$/),
      ]);
      expect(memo.get('id')).toBe(1);
      // The Account's events are written as ever; the Memo writes none.
      expect((await events()).slice(before)).toEqual([
        'bank.account.inserted',
        'bank.account.inserted',
        'bank.account.inserted',
      ]);
    });

    it('the outbox-wide sink writes in the write’s transaction: a rollback takes its rows with the change', async () => {
      const before = (await events()).length;
      await db.sequelize
        .transaction(async (transaction) => {
          await Account.create({ status: 'doomed' }, { transaction });
          await Memo.create({ status: 'doomed' }, { transaction });
          const [inside] = (await db.sequelize.query(`SELECT count(*) AS n FROM ${audit}`, {
            transaction,
          })) as [{ n: number | string }[], unknown];
          expect(Number(inside[0].n)).toBe(2);
          throw new Error('the business change failed');
        })
        .catch(() => {});
      expect(await auditRows()).toEqual([]);
      expect(await Account.count({ where: { status: 'doomed' } })).toBe(0);
      expect(await Memo.count({ where: { status: 'doomed' } })).toBe(0);
      expect((await events()).length).toBe(before);
    });

    it('an outbox-wide sink that throws aborts the write (the capture’s own sink never runs); the caller’s transaction goes on', async () => {
      const before = (await events()).length;
      refuse = true;
      await expect(Account.create({ status: 'refused' })).rejects.toThrow('audit store refused');
      await expect(Memo.create({ status: 'refused' })).rejects.toThrow('audit store refused');
      expect(calls).toEqual(['auditTrail bank.Account 1', 'auditTrail Memo 1']);
      expect(await Account.count({ where: { status: 'refused' } })).toBe(0);
      expect(await Memo.count({ where: { status: 'refused' } })).toBe(0);
      await db.sequelize.transaction(async (transaction) => {
        await expect(Account.create({ status: 'refused' }, { transaction })).rejects.toThrow(
          'audit store refused',
        );
        refuse = false;
        await Account.create({ status: 'kept' }, { transaction });
      });
      expect(await auditRows()).toEqual([
        expect.stringMatching(/^bank\.Account inserted \d+ kept$/),
      ]);
      expect((await events()).slice(before)).toEqual(['bank.account.inserted']);
    });
  },
);

describe('defineOutbox({ sinks }): declaring outbox-wide sinks', () => {
  const model = {
    name: 'Thing',
    getAttributes: () => ({ id: { primaryKey: true }, status: {} }),
    primaryKeyAttributes: ['id'],
  };
  const audit: ChangeSink = { name: 'audit', write: () => {} };

  it('a capture with outbox: false is fed by the outbox-wide sinks alone; with no sink anywhere it is refused', () => {
    const config = defineOutbox({
      events: {},
      sinks: [audit],
      capture: [capture(model, { outbox: false })],
    });
    expect(config.captures[0].sinks).toEqual([audit]);
    expect(() =>
      defineOutbox({ events: {}, capture: [capture(model, { outbox: false })] }),
    ).toThrow(
      'capture[0].outbox of Thing is false and no sink is given (its sink, or defineOutbox({ sinks })): the capture would write nothing',
    );
  });

  it('refuses what is no ChangeSink, a sink listed twice, sinks with no capture, and a sink also given to a capture', () => {
    expect(() =>
      defineOutbox({
        events: {},
        sinks: [() => {}] as never,
        capture: [capture(model, { app: 'x' })],
      }),
    ).toThrow(
      /sinks\[0\] must be a ChangeSink \(\{ name, write\(changes, context\) \}\) \(got a function\)/,
    );
    expect(() =>
      defineOutbox({
        events: {},
        sinks: [audit, { name: 'audit', write: () => {} }],
        capture: [capture(model, { app: 'x' })],
      }),
    ).toThrow(/sinks\[1\] is a second sink named "audit"/);
    expect(() => defineOutbox({ events: {}, sinks: [audit] })).toThrow(
      /sinks lists "audit", but no model is captured/,
    );
    const error = (() => {
      try {
        defineOutbox({
          events: {},
          sinks: [audit],
          capture: [capture(model, { app: 'x', sink: audit })],
        });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toContain(
      'capture[0].sink of Thing lists the sink "audit", which defineOutbox({ sinks }) already hands every capture\'s changes to; drop it from one of the two',
    );
  });
});
