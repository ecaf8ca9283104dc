import { createNamespace } from 'cls-hooked';
import { Sequelize } from 'sequelize';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, type Outbox, receiver } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { sqliteTestDatabase } from '../../testing/databases.js';
import { openOutbox, tableName } from '../relay/support.js';
import { describeEachDialect, isMariadb } from '../support/dialects.js';
import { eventCount, recordingWakeup } from './support.js';

const OrderPlaced = event({ schema: z.object({ orderId: z.string() }) });

/** A config whose onCommit receiver records the orders it saw into `seen`. */
function shop(seen: string[]) {
  return defineOutbox({
    events: { 'shop.OrderPlaced': OrderPlaced },
    receivers: {
      'mail.confirm': receiver(OrderPlaced, { handle: () => {} }),
      'log.placed': receiver(OrderPlaced, {
        mode: 'onCommit',
        handle: (e) => void seen.push(e.payload.orderId),
      }),
    },
  });
}

describeEachDialect('after-commit work waits for the outermost commit', (dialect) => {
  let db: TestDatabase;
  const seen: string[] = [];
  const wakeup = recordingWakeup();
  let outbox: Outbox<ReturnType<typeof shop>>;

  beforeAll(async () => {
    db = await dialect.open();
    outbox = await openOutbox(db, shop(seen), { wakeup });
  });
  afterEach(() => {
    seen.length = 0;
    wakeup.signals.length = 0;
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  it('a fire in a savepoint runs no onCommit receiver and sends no signal when the outer transaction then rolls back', async () => {
    const before = await eventCount(outbox);
    await expect(
      db.sequelize.transaction(async (outer) => {
        await db.sequelize.transaction({ transaction: outer }, (savepoint) =>
          outbox.fire('shop.OrderPlaced', { orderId: 'sp-doomed' }, { transaction: savepoint }),
        );
        // The savepoint is released here; nothing has committed yet.
        expect(seen).toEqual([]);
        expect(wakeup.signals).toEqual([]);
        throw new Error('the outer transaction fails');
      }),
    ).rejects.toThrow('the outer transaction fails');
    expect(await eventCount(outbox)).toBe(before);
    expect(seen).toEqual([]);
    expect(wakeup.signals).toEqual([]);
  });

  it('a fire in a savepoint runs its onCommit receivers and signals once the outer transaction commits', async () => {
    const order: string[] = [];
    await db.sequelize.transaction(async (outer) => {
      await db.sequelize.transaction({ transaction: outer }, (savepoint) =>
        outbox.fire('shop.OrderPlaced', { orderId: 'sp-kept' }, { transaction: savepoint }),
      );
      order.push(`savepoint released: ${seen.length} seen, ${wakeup.signals.length} signals`);
    });
    order.push(`outer committed: ${seen.join(',')}, ${JSON.stringify(wakeup.signals)}`);
    expect(order).toEqual([
      'savepoint released: 0 seen, 0 signals',
      'outer committed: sp-kept, [["shop.OrderPlaced"]]',
    ]);
  });

  it('a repeated idempotency key runs no onCommit receiver and sends no signal: it wrote nothing', async () => {
    const key = `repeat-${Date.now()}`;
    await outbox.fire('shop.OrderPlaced', { orderId: 'first' }, { idempotencyKey: key });
    expect(seen).toEqual(['first']);
    expect(wakeup.signals).toEqual([['shop.OrderPlaced']]);
    const before = await eventCount(outbox);
    const again = await outbox.fire(
      'shop.OrderPlaced',
      { orderId: 'again' },
      { idempotencyKey: key },
    );
    expect(again.duplicate).toBe(true);
    expect(await eventCount(outbox)).toBe(before);
    expect(seen).toEqual(['first']);
    expect(wakeup.signals).toEqual([['shop.OrderPlaced']]);
  });

  it('a fire in a savepoint that is rolled back runs nothing, while the outer transaction commits the rest', async () => {
    await db.sequelize.transaction(async (outer) => {
      await outbox.fire('shop.OrderPlaced', { orderId: 'outer-kept' }, { transaction: outer });
      await expect(
        db.sequelize.transaction({ transaction: outer }, async (savepoint) => {
          await outbox.fire(
            'shop.OrderPlaced',
            { orderId: 'sp-undone' },
            { transaction: savepoint },
          );
          throw new Error('the savepoint fails');
        }),
      ).rejects.toThrow('the savepoint fails');
    });
    expect(seen).toEqual(['outer-kept']);
    expect(wakeup.signals).toEqual([['shop.OrderPlaced']]);
  });

  it('fires in several savepoints of one transaction are signalled once, after the outer commit', async () => {
    await db.sequelize.transaction(async (outer) => {
      for (const orderId of ['a', 'b']) {
        await db.sequelize.transaction({ transaction: outer }, (savepoint) =>
          outbox.fire('shop.OrderPlaced', { orderId }, { transaction: savepoint }),
        );
      }
    });
    expect(seen).toEqual(['a', 'b']);
    expect(wakeup.signals).toEqual([['shop.OrderPlaced']]);
  });

  // MariaDB checks every constraint at its statement (no DEFERRABLE): its COMMIT does not
  // fail on one, so there is no such COMMIT to provoke there.
  it.skipIf(isMariadb(dialect.name))(
    'a COMMIT that fails (a deferred constraint) runs no onCommit receiver and sends no signal',
    async () => {
      // SQLite has no deferrable unique constraint, but a deferrable foreign key fails its COMMIT
      // just as well. The failed transaction's connection stays locked on SQLite, so a database
      // of its own.
      const own = dialect.name === 'sqlite' ? await sqliteTestDatabase() : db;
      const ownOutbox =
        own === db ? outbox : await openOutbox(own, shop(seen), { wakeup, tablePrefix: 'own_' });
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => {}); // Sequelize's own warning
      try {
        const checked = tableName(own, 'deferred_check');
        if (dialect.name === 'postgres') {
          await own.sequelize.query(
            `CREATE TABLE ${checked} (x int UNIQUE DEFERRABLE INITIALLY DEFERRED)`,
          );
        } else {
          await own.sequelize.query('CREATE TABLE parent_row (id integer PRIMARY KEY)');
          await own.sequelize.query(
            `CREATE TABLE ${checked} (x integer REFERENCES parent_row(id) DEFERRABLE INITIALLY DEFERRED)`,
          );
        }
        const before = await eventCount(ownOutbox);
        const failure = await own.sequelize
          .transaction(async (transaction) => {
            // Both statements succeed; the constraint is checked at COMMIT.
            await own.sequelize.query(`INSERT INTO ${checked} (x) VALUES (1), (1)`, {
              transaction,
            });
            await ownOutbox.fire(
              'shop.OrderPlaced',
              { orderId: 'never-committed' },
              { transaction },
            );
          })
          .then(
            () => undefined,
            (error: { sql?: string; parent?: Error }) => error,
          );
        expect(failure?.sql).toBe('COMMIT;');
        expect(failure?.parent?.message).toMatch(
          /duplicate key value|FOREIGN KEY constraint failed/,
        );
        expect(await eventCount(ownOutbox)).toBe(before);
        expect(seen).toEqual([]);
        expect(wakeup.signals).toEqual([]);
      } finally {
        warn.mockRestore();
        if (own !== db) {
          await ownOutbox.close();
          await own.cleanup();
        }
      }
    },
  );
});

describeEachDialect('two outboxes firing in one transaction', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(async () => {
    await db.cleanup();
  });

  it("signal each outbox's own wakeup, once, after the commit", async () => {
    const seenA: string[] = [];
    const seenB: string[] = [];
    const wakeupA = recordingWakeup('a');
    const wakeupB = recordingWakeup('b');
    const a = await openOutbox(db, shop(seenA), { wakeup: wakeupA, tablePrefix: 'first_' });
    const b = await openOutbox(db, shop(seenB), { wakeup: wakeupB, tablePrefix: 'second_' });
    try {
      await db.sequelize.transaction(async (transaction) => {
        await a.fire('shop.OrderPlaced', { orderId: 'a1' }, { transaction });
        await b.fire('shop.OrderPlaced', { orderId: 'b1' }, { transaction });
        await a.fire('shop.OrderPlaced', { orderId: 'a2' }, { transaction });
        expect([...wakeupA.signals, ...wakeupB.signals]).toEqual([]);
      });
      expect(wakeupA.signals).toEqual([['shop.OrderPlaced']]);
      expect(wakeupB.signals).toEqual([['shop.OrderPlaced']]);
      expect(seenA).toEqual(['a1', 'a2']);
      expect(seenB).toEqual(['b1']);
      expect([await eventCount(a), await eventCount(b)]).toEqual([2, 1]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('and neither is signalled when the transaction rolls back', async () => {
    const wakeupA = recordingWakeup('a');
    const wakeupB = recordingWakeup('b');
    const a = await openOutbox(db, shop([]), { wakeup: wakeupA });
    const b = await openOutbox(db, shop([]), { wakeup: wakeupB });
    try {
      await expect(
        db.sequelize.transaction(async (transaction) => {
          await a.fire('shop.OrderPlaced', { orderId: 'a1' }, { transaction });
          await b.fire('shop.OrderPlaced', { orderId: 'b1' }, { transaction });
          throw new Error('roll back both');
        }),
      ).rejects.toThrow('roll back both');
      expect([wakeupA.signals, wakeupB.signals]).toEqual([[], []]);
      expect([await eventCount(a), await eventCount(b)]).toEqual([0, 0]);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('fire() in a CLS savepoint [sqlite]', () => {
  it('the ambient savepoint defers onCommit receivers and the signal to the outer commit, and drops them for its rollback', async () => {
    Sequelize.useCLS(createNamespace(`outboxkit-after-commit-${Math.random()}`));
    const db = await sqliteTestDatabase();
    const seen: string[] = [];
    const wakeup = recordingWakeup();
    try {
      const outbox = await openOutbox(db, shop(seen), { wakeup });
      await expect(
        db.sequelize.transaction(async (outer) => {
          // No transaction passed to fire(): it joins the ambient one, here a savepoint.
          await db.sequelize.transaction({ transaction: outer }, () =>
            outbox.fire('shop.OrderPlaced', { orderId: 'cls-doomed' }),
          );
          throw new Error('outer fails');
        }),
      ).rejects.toThrow('outer fails');
      expect([seen, wakeup.signals, await eventCount(outbox)]).toEqual([[], [], 0]);

      await db.sequelize.transaction(async (outer) => {
        await db.sequelize.transaction({ transaction: outer }, () =>
          outbox.fire('shop.OrderPlaced', { orderId: 'cls-kept' }),
        );
        expect(seen).toEqual([]);
      });
      expect([seen, wakeup.signals, await eventCount(outbox)]).toEqual([
        ['cls-kept'],
        [['shop.OrderPlaced']],
        1,
      ]);
      await outbox.close();
    } finally {
      (Sequelize as unknown as { _cls: unknown })._cls = undefined;
      await db.cleanup();
    }
  });
});
