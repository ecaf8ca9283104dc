/** Its own file: `Sequelize.useCLS` is process-wide. */
import { createNamespace } from 'cls-hooked';
import { Sequelize } from 'sequelize';
import { afterAll, expect, it } from 'vitest';
import { sqliteTestDatabase } from '../../testing/databases.js';
import { openConsumer } from './support.js';

const ID = '01890a5d-ac96-774b-bcce-b302099a8057';

afterAll(() => {
  (Sequelize as unknown as { _cls: unknown })._cls = undefined;
});

it('joins the transaction the CLS namespace carries: a rollback of it undoes the inbox row and the work', async () => {
  Sequelize.useCLS(createNamespace(`outboxkit-inbox-test-${Math.random()}`));
  await using db = await sqliteTestDatabase();
  const c = await openConsumer(db);
  await expect(
    db.sequelize.transaction(async (outer) => {
      await c.inbox.handle({ id: ID }, async (t) => {
        // The work runs in a savepoint of the ambient transaction.
        expect((t as unknown as { parent?: unknown }).parent).toBe(outer);
        await c.record(t, ID);
      });
      throw new Error('roll it back');
    }),
  ).rejects.toThrow('roll it back');
  expect(await c.work()).toEqual([]);
  expect(await c.rows()).toEqual([]);
  await db.sequelize.transaction(async () => {
    expect((await c.inbox.handle({ id: ID }, (t) => c.record(t, ID))).status).toBe('processed');
  });
  expect(await c.work()).toEqual([[ID, 'done']]);
});
