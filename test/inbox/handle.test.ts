import { afterAll, beforeAll, expect, it } from 'vitest';
import { inbox, ValidationError } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { T0, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import { epochMs, openConsumer } from './support.js';

const ID = '01890a5d-ac96-774b-bcce-b302099a8057';
const OTHER = '01890a5d-ac96-774b-bcce-b302099a8058';

describeEachDialect('inbox.handle', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(async () => {
    await db?.cleanup();
  });

  it('a new message is processed: the work runs, and the id is recorded with received_at and processed_at', async () => {
    const clock = testClock();
    const c = await openConsumer(db, { clock: clock.now });
    const result = await c.inbox.handle({ id: ID, topic: 'shop.OrderPlaced' }, async (t) => {
      clock.advance(250);
      await c.record(t, ID);
      return 'invoice-1';
    });
    expect(result).toEqual({ status: 'processed', eventId: ID, result: 'invoice-1' });
    expect(await c.work()).toEqual([[ID, 'done']]);
    const rows = await c.rows();
    expect(rows).toMatchObject([{ consumer: 'default', event_id: ID, topic: 'shop.OrderPlaced' }]);
    expect(epochMs(rows[0].received_at)).toBe(T0.getTime());
    expect(epochMs(rows[0].processed_at)).toBe(T0.getTime() + 250);
  });

  it('the inbox skipping a redelivery: a message processed before is a duplicate, and its work does not run again', async () => {
    const c = await openConsumer(db);
    let runs = 0;
    const work = async (t: Parameters<Parameters<typeof c.inbox.handle>[1]>[0]) => {
      runs += 1;
      await c.record(t, ID);
    };
    expect((await c.inbox.handle({ id: ID }, work)).status).toBe('processed');
    expect(await c.inbox.handle({ id: ID }, work)).toEqual({ status: 'duplicate', eventId: ID });
    expect(await c.inbox.handle({ id: ID, topic: 'another' }, work)).toMatchObject({
      status: 'duplicate',
    });
    expect(runs).toBe(1);
    expect(await c.work()).toEqual([[ID, 'done']]);
    expect(await c.rows()).toHaveLength(1);
    // Another id is another message.
    expect((await c.inbox.handle({ id: OTHER }, work)).status).toBe('processed');
    expect(runs).toBe(2);
  });

  it('a failure in the work rolls back both the work and the inbox row: the redelivery processes the message', async () => {
    const c = await openConsumer(db);
    const boom = new Error('the payment service said no');
    await expect(
      c.inbox.handle({ id: ID }, async (t) => {
        await c.record(t, ID, 'first try');
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await c.work()).toEqual([]);
    expect(await c.rows()).toEqual([]);
    const again = await c.inbox.handle({ id: ID }, (t) => c.record(t, ID, 'second try'));
    expect(again.status).toBe('processed');
    expect(await c.work()).toEqual([[ID, 'second try']]);
  });

  it("joins the caller's transaction: the inbox row commits with the caller's other work, or rolls back with it", async () => {
    const c = await openConsumer(db);
    await expect(
      db.sequelize.transaction(async (transaction) => {
        await c.record(transaction, 'caller-before');
        await c.inbox.handle({ id: ID }, (t) => c.record(t, ID), { transaction });
        throw new Error('the caller changed its mind');
      }),
    ).rejects.toThrow('changed its mind');
    expect(await c.work()).toEqual([]);
    expect(await c.rows()).toEqual([]);

    await db.sequelize.transaction(async (transaction) => {
      await c.record(transaction, 'caller-before');
      const r = await c.inbox.handle({ id: ID }, (t) => c.record(t, ID), { transaction });
      expect(r.status).toBe('processed');
    });
    expect(await c.work()).toEqual([
      [ID, 'done'],
      ['caller-before', 'done'],
    ]);
    // Inside another transaction, the committed row makes it a duplicate.
    await db.sequelize.transaction(async (transaction) => {
      const r = await c.inbox.handle({ id: ID }, (t) => c.record(t, ID), { transaction });
      expect(r.status).toBe('duplicate');
    });
    expect(await c.rows()).toHaveLength(1);
  });

  it("inside a caller's transaction, a failed work takes its inbox row with it even when the caller catches and commits", async () => {
    const c = await openConsumer(db);
    await db.sequelize.transaction(async (transaction) => {
      await c.record(transaction, 'caller-work');
      await expect(
        c.inbox.handle(
          { id: ID },
          async (t) => {
            await c.record(t, ID);
            throw new Error('no');
          },
          { transaction },
        ),
      ).rejects.toThrow('no');
      // The caller goes on, and commits: its own work stays, the message's does not.
    });
    expect(await c.work()).toEqual([['caller-work', 'done']]);
    expect(await c.rows()).toEqual([]);
    expect((await c.inbox.handle({ id: ID }, (t) => c.record(t, ID))).status).toBe('processed');
  });

  it('a consumer name keeps inboxes apart: each consumer processes the same message once of its own', async () => {
    const billing = await openConsumer(db, { consumer: 'billing' });
    const search = inbox(db.sequelize, {
      schema: db.outboxOptions.schema,
      tablePrefix: billing.prefix,
      consumer: 'search',
    });
    const runs: string[] = [];
    for (const box of [billing.inbox, search, billing.inbox, search]) {
      await box.handle({ id: ID }, () => {
        runs.push(box.consumer);
      });
    }
    expect(runs).toEqual(['billing', 'search']);
    expect((await billing.rows()).map((r) => [r.consumer, r.event_id])).toEqual([
      ['billing', ID],
      ['search', ID],
    ]);
  });

  it('a message with no event id is refused with a clear error, before anything runs or is written', async () => {
    const c = await openConsumer(db);
    let ran = false;
    const work = () => {
      ran = true;
    };
    const refused = (message: unknown) =>
      c.inbox.handle(message as never, work).then(
        () => undefined,
        (error: unknown) => error,
      );
    const error = await refused({ topic: 'shop.OrderPlaced' });
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ code: 'OUTBOX_VALIDATION', path: 'message.id' });
    expect((error as Error).message).toMatchInlineSnapshot(
      `"inbox.handle(message): the message has no event id (message.id is undefined); an outboxkit transport sends it as the outbox-event-id header, so a message without one was not sent by one (or lost its headers on the way)"`,
    );
    expect(await refused({ id: '' })).toBeInstanceOf(ValidationError);
    expect(await refused({ id: 42 })).toBeInstanceOf(ValidationError);
    expect(await refused({ id: 'x'.repeat(256) })).toMatchObject({ path: 'message.id' });
    expect(((await refused(null)) as Error).message).toMatch(/fromKafka, fromRabbitmq/);
    expect(await refused({ id: ID, topic: 7 })).toMatchObject({ path: 'message.topic' });
    expect(
      await c.inbox.handle({ id: ID }, 'not a function' as never).catch((e: unknown) => e),
    ).toMatchObject({ path: 'work' });
    expect(ran).toBe(false);
    expect(await c.rows()).toEqual([]);
  });

  it('refuses a transaction of another Sequelize, and one already ended', async () => {
    const c = await openConsumer(db);
    const other = db.connectAgain();
    const foreign = await other.transaction();
    await expect(c.inbox.handle({ id: ID }, () => {}, { transaction: foreign })).rejects.toThrow(
      /another Sequelize instance/,
    );
    await foreign.rollback();
    const done = await db.sequelize.transaction();
    await done.commit();
    await expect(c.inbox.handle({ id: ID }, () => {}, { transaction: done })).rejects.toThrow(
      /already ended \(commit\)/,
    );
    expect(await c.rows()).toEqual([]);
  });
});
