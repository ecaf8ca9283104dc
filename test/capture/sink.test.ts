import { DataTypes, type ModelStatic, type Model as SequelizeModel } from 'sequelize';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import {
  type CapturedChange,
  type ChangeSink,
  ConfigurationError,
  capture,
  defineOutbox,
  installCapture,
  type Outbox,
  receiver,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox, tableName, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

type AnyModel = ModelStatic<SequelizeModel>;

describeEachDialect('capture: a ChangeSink of the app’s, in the write’s transaction', (dialect) => {
  let db: TestDatabase;
  let outbox: Outbox;
  let Account: AnyModel;
  let Memo: AnyModel;
  let Ledger: AnyModel;
  let audit: string;
  let refuse = false;
  const calls: { sink: string; changes: number }[] = [];

  /** An audit trail: one row per change, written through the write's own transaction. */
  const auditTrail: ChangeSink = {
    name: 'auditTrail',
    async write(changes, { transaction, label }) {
      calls.push({ sink: 'auditTrail', changes: changes.length });
      for (const c of changes) {
        await db.sequelize.query(
          `INSERT INTO ${audit} (label, operation, pk, after_status) VALUES (?, ?, ?, ?)`,
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
  const counter: ChangeSink & { seen: CapturedChange[] } = {
    name: 'counter',
    seen: [],
    write(changes) {
      calls.push({ sink: 'counter', changes: changes.length });
      counter.seen.push(...changes);
    },
  };

  beforeAll(async () => {
    db = await dialect.open();
    const schema = db.outboxOptions.schema ? { schema: db.outboxOptions.schema } : {};
    audit = tableName(db, 'audit_log');
    await db.sequelize.query(
      `CREATE TABLE ${audit} (label varchar(100), operation varchar(20), pk varchar(40), after_status varchar(40))`,
    );
    Account = db.sequelize.define(
      'Account',
      { status: DataTypes.STRING },
      { tableName: 'accounts', timestamps: false, ...schema },
    );
    Memo = db.sequelize.define(
      'Memo',
      { status: DataTypes.STRING },
      { tableName: 'memos', timestamps: false, ...schema },
    );
    Ledger = db.sequelize.define(
      'Ledger',
      { status: DataTypes.STRING },
      { tableName: 'ledgers', timestamps: false, ...schema },
    );
    await Promise.all([Account.sync(), Memo.sync(), Ledger.sync()]);
    outbox = await openOutbox(
      db,
      defineOutbox({
        events: {},
        capture: [
          // Beside the outbox: events AND audit rows, in order of declaration.
          capture(Account, { app: 'bank', sink: [auditTrail, counter] }),
          // Instead of the outbox: audit rows only, no topic, no app needed.
          capture(Memo, { sink: auditTrail, outbox: false }),
          capture(Ledger, { app: 'bank', sink: auditTrail, payload: 'beforeAndAfter' }),
        ],
        receivers: {
          'bank.mail': receiver('bank.account.inserted', { handle: () => {} }),
        },
      }),
      { clock: testClock().now },
    );
    installCapture(outbox);
  });
  beforeEach(async () => {
    refuse = false;
    calls.length = 0;
    counter.seen.length = 0;
    await db.sequelize.query(`DELETE FROM ${audit}`);
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  const auditRows = async () =>
    (
      (await db.sequelize.query(
        `SELECT label, operation, pk, after_status FROM ${audit} ORDER BY operation, pk`,
        { type: 'SELECT' },
      )) as Record<string, unknown>[]
    ).map((r) => `${r.label} ${r.operation} ${r.pk} ${r.after_status ?? '-'}`);
  const events = async () => (await runtimeOf(outbox).store.readEvents({})).map((e) => e.name);

  it('beside the outbox: each statement’s changes reach every sink, in order, with the events', async () => {
    const before = (await events()).length;
    const account = await Account.create({ status: 'open' });
    await Account.update({ status: 'frozen' }, { where: { id: account.get('id') } });
    await Account.bulkCreate([{ status: 'a' }, { status: 'b' }]);
    const id = account.get('id');
    expect(await auditRows()).toEqual(
      expect.arrayContaining([
        `bank.Account inserted ${id} open`,
        `bank.Account updated ${id} frozen`,
      ]),
    );
    expect((await auditRows()).length).toBe(4);
    // One call per statement and sink: the bulkCreate's two rows in one call.
    expect(calls).toEqual([
      { sink: 'auditTrail', changes: 1 },
      { sink: 'counter', changes: 1 },
      { sink: 'auditTrail', changes: 1 },
      { sink: 'counter', changes: 1 },
      { sink: 'auditTrail', changes: 2 },
      { sink: 'counter', changes: 2 },
    ]);
    expect(counter.seen[1]).toMatchObject({
      model: 'bank.Account',
      operation: 'updated',
      pk: id,
      changed: ['status'],
    });
    expect((await events()).slice(before)).toEqual([
      'bank.account.inserted',
      'bank.account.updated',
      'bank.account.inserted',
      'bank.account.inserted',
    ]);
  });

  it('instead of the outbox (outbox: false): the sink alone, no event and no declared topic', async () => {
    const before = (await events()).length;
    const memo = await Memo.create({ status: 'draft' });
    await memo.destroy();
    expect(await auditRows()).toEqual([
      `Memo deleted ${memo.get('id')} -`,
      `Memo inserted ${memo.get('id')} draft`,
    ]);
    expect((await events()).length).toBe(before);
    expect(outbox.config.eventList.map((e) => e.name).filter((n) => n.includes('memo'))).toEqual(
      [],
    );
  });

  it('the sink’s rows commit with the write or not at all: a rollback takes the row, its events and its audit rows', async () => {
    const before = (await events()).length;
    await db.sequelize
      .transaction(async (transaction) => {
        await Account.create({ status: 'doomed' }, { transaction });
        await Memo.create({ status: 'doomed' }, { transaction });
        // Inside the transaction the sink's rows are there, beside the write's.
        const [inside] = (await db.sequelize.query(`SELECT count(*) AS n FROM ${audit}`, {
          transaction,
        })) as [{ n: number | string }[], unknown];
        expect(Number(inside[0].n)).toBe(2);
        throw new Error('the business change failed');
      })
      .catch(() => {});
    expect(await auditRows()).toEqual([]);
    expect(await Account.count({ where: { status: 'doomed' } })).toBe(0);
    expect((await events()).length).toBe(before);
  });

  it('a sink that throws aborts the write as an inline receiver does; the caller’s transaction goes on', async () => {
    const before = (await events()).length;
    refuse = true;
    await expect(Ledger.create({ status: 'refused' })).rejects.toThrow('audit store refused');
    expect(await Ledger.count()).toBe(0);
    await db.sequelize.transaction(async (transaction) => {
      await expect(Ledger.create({ status: 'refused' }, { transaction })).rejects.toThrow(
        'audit store refused',
      );
      refuse = false;
      await Ledger.create({ status: 'kept' }, { transaction });
    });
    expect(await Ledger.findAll({ attributes: ['status'], raw: true })).toEqual([
      { status: 'kept' },
    ]);
    expect(await auditRows()).toEqual([expect.stringMatching(/^bank\.Ledger inserted \d+ kept$/)]);
    expect((await events()).slice(before)).toEqual(['bank.ledger.inserted']);
  });
});

it('capture refuses a sink that is no ChangeSink, and defineOutbox outbox: false without a sink', () => {
  const model = {
    name: 'Thing',
    getAttributes: () => ({ id: { primaryKey: true }, status: {} }),
    primaryKeyAttributes: ['id'],
  };
  expect(() => capture(model, { app: 'x', sink: (() => {}) as never })).toThrow(
    /capture\(Thing\)\.sink must be a ChangeSink \(\{ name, write\(changes, context\) \}\) or an array of them/,
  );
  expect(() => capture(model, { app: 'x', sink: [{ name: 'a' }] as never })).toThrow(
    ConfigurationError,
  );
  // outbox: false without a sink of its own is defineOutbox's to refuse (it may have
  // outbox-wide sinks): see test/capture/outbox-sinks.test.ts.
  expect(() => defineOutbox({ events: {}, capture: [capture(model, { outbox: false })] })).toThrow(
    /capture\[0\]\.outbox of Thing is false and no sink is given/,
  );
  expect(() =>
    capture(model, { outbox: false, sink: { name: 'a', write: () => {} } }),
  ).not.toThrow();
});
