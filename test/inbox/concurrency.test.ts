import type { Sequelize } from 'sequelize';
import { describe, expect, inject, it } from 'vitest';
import { type InboxResult, inbox } from '../../src/index.js';
import { postgresTestSchema, sqliteTestDatabase } from '../../testing/databases.js';
import { gate, waitFor } from '../relay/support.js';
import { openConsumer } from './support.js';

const ID = '01890a5d-ac96-774b-bcce-b302099a8057';

describe.skipIf(!inject('pgAvailable'))('inbox: concurrent redeliveries [postgres]', () => {
  /** How many backends wait on a lock while running a statement on the schema's tables. */
  async function waitingOnLock(sequelize: Sequelize, schema: string): Promise<number> {
    const [rows] = (await sequelize.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`,
      { bind: [`"${schema}".`] },
    )) as [{ n: number }[], unknown];
    return rows[0].n;
  }

  it("two connections deliver the same message at once: exactly one processes, the other waits on the first's uncommitted row, then skips", async () => {
    await using db = await postgresTestSchema();
    const schema = db.outboxOptions.schema!;
    const [a, b] = [db.connectAgain(), db.connectAgain()];
    const c = await openConsumer(db, { sequelize: a });
    const second = inbox(b, { schema, tablePrefix: c.prefix });
    const inWork = gate();
    const release = gate();
    const first = c.inbox.handle({ id: ID }, async (t) => {
      await c.record(t, ID, 'first');
      inWork.open();
      await release.promise;
    });
    await inWork.promise;
    let settled = false;
    const redelivery = second
      .handle({ id: ID }, (t) => c.record(t, ID, 'second', b))
      .finally(() => {
        settled = true;
      });
    await waitFor(
      async () => (await waitingOnLock(db.sequelize, schema)) === 1,
      "the second insert to wait on the first's row",
    );
    expect(settled).toBe(false);
    release.open();
    expect((await first).status).toBe('processed');
    expect(await redelivery).toEqual({ status: 'duplicate', eventId: ID });
    expect(await c.work()).toEqual([[ID, 'first']]);
    expect(await c.rows()).toHaveLength(1);
  });

  it('when the first rolls back, the waiting redelivery takes the message over and processes it', async () => {
    await using db = await postgresTestSchema();
    const schema = db.outboxOptions.schema!;
    const [a, b] = [db.connectAgain(), db.connectAgain()];
    const c = await openConsumer(db, { sequelize: a });
    const second = inbox(b, { schema, tablePrefix: c.prefix });
    const inWork = gate();
    const fail = gate();
    const first = c.inbox.handle({ id: ID }, async (t) => {
      await c.record(t, ID, 'first');
      inWork.open();
      await fail.promise;
      throw new Error('the first consumer crashed mid-work');
    });
    await inWork.promise;
    const redelivery = second.handle({ id: ID }, (t) => c.record(t, ID, 'second', b));
    await waitFor(
      async () => (await waitingOnLock(db.sequelize, schema)) === 1,
      "the second insert to wait on the first's row",
    );
    fail.open();
    await expect(first).rejects.toThrow('crashed mid-work');
    expect((await redelivery).status).toBe('processed');
    expect(await c.work()).toEqual([[ID, 'second']]);
  });

  it('many deliveries of one message racing on several connections: the work runs exactly once', async () => {
    await using db = await postgresTestSchema();
    const schema = db.outboxOptions.schema!;
    const connections = [db.connectAgain(), db.connectAgain(), db.connectAgain()];
    const c = await openConsumer(db, { sequelize: connections[0] });
    const boxes = connections.map((s) => inbox(s, { schema, tablePrefix: c.prefix }));
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        boxes[i % 3].handle({ id: ID }, async (t) => {
          await c.record(t, ID, `delivery ${i}`, connections[i % 3]);
        }),
      ),
    );
    expect(results.filter((r) => r.status === 'processed')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'duplicate')).toHaveLength(11);
    expect(await c.work()).toHaveLength(1);
  });
});

describe('inbox: concurrent redeliveries [sqlite]', () => {
  it('two connections on one SQLite file: the single write lock serialises them, and the second skips', async () => {
    await using db = await sqliteTestDatabase();
    const [a, b] = [db.connectAgain(), db.connectAgain()];
    const c = await openConsumer(db, { sequelize: a });
    const second = inbox(b, { tablePrefix: c.prefix });
    const inWork = gate();
    const release = gate();
    const first = c.inbox.handle({ id: ID }, async (t) => {
      await c.record(t, ID, 'first');
      inWork.open();
      await release.promise;
    });
    await inWork.promise;
    let settled: InboxResult<void> | undefined;
    const redelivery = second
      .handle({ id: ID }, (t) => c.record(t, ID, 'second', b))
      .then((r) => {
        settled = r;
        return r;
      });
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(settled).toBeUndefined(); // waiting for the write lock (the busy timeout)
    release.open();
    expect((await first).status).toBe('processed');
    expect(await redelivery).toEqual({ status: 'duplicate', eventId: ID });
    expect(await c.work()).toEqual([[ID, 'first']]);
  });
});
