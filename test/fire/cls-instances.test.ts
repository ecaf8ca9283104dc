/**
 * Its own file: `Sequelize.useCLS` is process-wide. Two Sequelize instances share the one
 * CLS namespace, so inside `sequelizeB.transaction(…)` it carries B's transaction to calls
 * of an outbox (or inbox) made with A: they must never join it.
 */
import { createNamespace } from 'cls-hooked';
import { Sequelize } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigurationError, defineOutbox, event } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { sqliteTestDatabase, type TestDatabase } from '../../testing/databases.js';
import { openConsumer } from '../inbox/support.js';
import { deliveryRows, openOutbox } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const ID = '01890a5d-ac96-774b-bcce-b302099a8057';

beforeAll(() => {
  Sequelize.useCLS(createNamespace(`outboxkit-cls-instances-${Math.random()}`));
});
afterAll(() => {
  (Sequelize as unknown as { _cls: unknown })._cls = undefined;
});

/** Where a SQLite test database's file is (Sequelize keeps it in its untyped options). */
const storageOf = (db: TestDatabase) =>
  (db.sequelize as unknown as { options: { storage: string } }).options.storage;

const config = defineOutbox({
  events: { 'a.Placed': event({ schema: z.object({ n: z.number() }) }) },
  receivers: {},
});

describeEachDialect('a CLS transaction of another Sequelize instance', (dialect) => {
  let a: TestDatabase;
  let b: TestDatabase;
  beforeAll(async () => {
    a = await dialect.open();
    b = await sqliteTestDatabase();
  });
  afterAll(async () => {
    await a?.cleanup();
    await b?.cleanup();
  });

  const eventsOf = async (outbox: Parameters<typeof runtimeOf>[0]) =>
    (await runtimeOf(outbox).store.readEvents({})).length;

  it("fire() inside another instance's transaction refuses with a ConfigurationError naming both; nothing lands in either database", async () => {
    const outboxA = await openOutbox(a, config);
    const outboxB = await openOutbox(b, config);
    let refusal: unknown;
    await b.sequelize.transaction(async () => {
      refusal = await outboxA.fire('a.Placed', { n: 1 }).catch((e: unknown) => e);
    });
    expect(refusal).toBeInstanceOf(ConfigurationError);
    const message = (refusal as Error).message;
    expect(message).toMatch(
      /^outbox\.fire\(\): the transaction Sequelize's CLS namespace carries belongs to another Sequelize instance/,
    );
    expect(message).toContain(`(sqlite ${storageOf(b)})`);
    expect(message).toContain(
      dialect.name === 'sqlite'
        ? `sqlite ${storageOf(a)}`
        : dialect.name === 'postgres'
          ? 'postgres database "test" at 127.0.0.1:5432'
          : `${dialect.name} database "${new URL(a.url).pathname.slice(1)}" at 127.0.0.1:3306`,
    );
    expect((refusal as ConfigurationError).path).toBe('options.transaction');
    expect(await eventsOf(outboxA)).toBe(0);
    expect(await eventsOf(outboxB)).toBe(0);
    await outboxA.close();
    await outboxB.close();
  });

  it('fireMany() refuses it the same way', async () => {
    const outboxA = await openOutbox(a, config);
    await expect(
      b.sequelize.transaction(() => outboxA.fireMany([{ name: 'a.Placed', payload: { n: 1 } }])),
    ).rejects.toThrow(ConfigurationError);
    expect(await eventsOf(outboxA)).toBe(0);
    await outboxA.close();
  });

  it('{ transaction: null } commits the event on its own, in its own database, even inside it', async () => {
    const outboxA = await openOutbox(a, config);
    const outboxB = await openOutbox(b, config);
    await expect(
      b.sequelize.transaction(async () => {
        await outboxA.fire('a.Placed', { n: 1 }, { transaction: null });
        throw new Error('roll B back');
      }),
    ).rejects.toThrow('roll B back');
    // B's rollback does not touch the event: it committed in A on its own.
    expect(await eventsOf(outboxA)).toBe(1);
    expect(await eventsOf(outboxB)).toBe(0);
    expect(await deliveryRows(outboxA)).toEqual([]);
    await outboxA.close();
    await outboxB.close();
  });

  it("an explicit transaction of the outbox's own instance is used inside another's CLS transaction", async () => {
    const outboxA = await openOutbox(a, config);
    await b.sequelize.transaction(async () => {
      await a.sequelize.transaction({ transaction: null } as never, async (own) => {
        await outboxA.fire('a.Placed', { n: 1 }, { transaction: own });
      });
    });
    expect(await eventsOf(outboxA)).toBe(1);
    await outboxA.close();
  });

  it("its own instance's CLS transaction is still joined: a rollback of it drops the event", async () => {
    const outboxA = await openOutbox(a, config);
    await expect(
      a.sequelize.transaction(async () => {
        await outboxA.fire('a.Placed', { n: 1 });
        throw new Error('roll A back');
      }),
    ).rejects.toThrow('roll A back');
    expect(await eventsOf(outboxA)).toBe(0);
    await outboxA.close();
  });

  it("inbox.handle() inside another instance's transaction refuses with a ConfigurationError; no inbox row, no work", async () => {
    const consumer = await openConsumer(a);
    let ran = false;
    let refusal: unknown;
    await b.sequelize.transaction(async () => {
      refusal = await consumer.inbox
        .handle({ id: ID }, async () => {
          ran = true;
        })
        .catch((e: unknown) => e);
    });
    expect(refusal).toBeInstanceOf(ConfigurationError);
    expect((refusal as Error).message).toMatch(
      /^inbox\.handle\(\): the transaction Sequelize's CLS namespace carries belongs to another Sequelize instance/,
    );
    expect(ran).toBe(false);
    expect(await consumer.rows()).toEqual([]);
    // With { transaction: null } it records in a transaction of its own.
    await b.sequelize.transaction(async () => {
      const outcome = await consumer.inbox.handle({ id: ID }, (t) => consumer.record(t, ID), {
        transaction: null,
      });
      expect(outcome.status).toBe('processed');
    });
    expect(await consumer.work()).toEqual([[ID, 'done']]);
  });
});
