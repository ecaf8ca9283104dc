import { afterAll, beforeAll, expect, it } from 'vitest';
import { ConfigurationError, inbox } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { capturingStatements, T0, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import { openConsumer } from './support.js';

const HOUR = 3_600_000;
const id = (n: number) => `01890a5d-ac96-774b-bcce-${String(n).padStart(12, '0')}`;

describeEachDialect('inbox.prune', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(async () => {
    await db?.cleanup();
  });

  /** A consumer that received message n at T0 + n hours, for n in 0..count-1. */
  async function aged(count: number, consumer = 'default', prefix?: string) {
    const clock = testClock();
    const c = await openConsumer(db, { clock: clock.now, consumer, prefix });
    for (let n = 0; n < count; n++) {
      clock.set(new Date(T0.getTime() + n * HOUR));
      await c.inbox.handle({ id: id(n) }, () => {});
    }
    return { ...c, clock };
  }

  it('deletes the rows received longer ago than the window, batch by batch, keeps the rest, and returns the count', async () => {
    const c = await aged(10);
    // At T0 + 12h, a window of 5 hours keeps messages received from T0 + 7h on.
    const now = new Date(T0.getTime() + 12 * HOUR);
    let deleted = 0;
    const statements = await capturingStatements(db.sequelize, async () => {
      deleted = await c.inbox.prune({ olderThan: { hours: 5 }, now, batchSize: 3 });
    });
    expect(deleted).toBe(7);
    // 3 + 3 + 1: the short batch says nothing is left.
    expect(statements.filter((s) => /DELETE FROM/.test(s))).toHaveLength(3);
    expect((await c.rows()).map((r) => r.event_id)).toEqual([id(7), id(8), id(9)]);
    expect(await c.inbox.prune({ olderThan: { hours: 5 }, now })).toBe(0);
  });

  it("a window is measured from the inbox's clock unless now is given", async () => {
    const c = await aged(4);
    c.clock.set(new Date(T0.getTime() + 4 * HOUR));
    expect(await c.inbox.prune({ olderThan: { hours: 2, minutes: 30 } })).toBe(2);
    expect((await c.rows()).map((r) => r.event_id)).toEqual([id(2), id(3)]);
  });

  it('olderThan as a Date deletes the rows received strictly before it', async () => {
    const c = await aged(4);
    expect(await c.inbox.prune({ olderThan: new Date(T0.getTime() + 2 * HOUR) })).toBe(2);
    expect((await c.rows()).map((r) => r.event_id)).toEqual([id(2), id(3)]);
  });

  it("prunes only its own consumer's rows", async () => {
    const billing = await aged(3, 'billing', 'pr_own_');
    const search = inbox(db.sequelize, {
      schema: db.outboxOptions.schema,
      tablePrefix: 'pr_own_',
      consumer: 'search',
      clock: () => T0,
    });
    await search.handle({ id: id(0) }, () => {});
    const later = new Date(T0.getTime() + 100 * HOUR);
    expect(await billing.inbox.prune({ olderThan: later })).toBe(3);
    expect((await billing.rows()).map((r) => [r.consumer, r.event_id])).toEqual([
      ['search', id(0)],
    ]);
  });

  it('a message redelivered after its row was pruned is processed again: keep rows longer than any redelivery', async () => {
    const c = await aged(1);
    let runs = 0;
    expect((await c.inbox.handle({ id: id(0) }, () => runs++)).status).toBe('duplicate');
    await c.inbox.prune({ olderThan: new Date(T0.getTime() + HOUR) });
    expect((await c.inbox.handle({ id: id(0) }, () => runs++)).status).toBe('processed');
    expect(runs).toBe(1);
  });

  it('refuses a window or batch it cannot work with, before deleting anything', async () => {
    const c = await aged(2);
    const refused = (o: unknown) => c.inbox.prune(o as never).catch((e: unknown) => e);
    expect(await refused({})).toBeInstanceOf(ConfigurationError);
    expect(((await refused({ olderThan: 7 })) as Error).message).toMatchInlineSnapshot(
      `"inbox.prune({ olderThan }) must be a duration such as { days: 7 } or a Date (got 7)"`,
    );
    expect(await refused({ olderThan: { days: 0 } })).toMatchObject({ path: 'olderThan' });
    expect(await refused({ olderThan: new Date('nope') })).toMatchObject({ path: 'olderThan' });
    expect(await refused({ olderThan: { days: 1 }, batchSize: 0 })).toMatchObject({
      path: 'batchSize',
    });
    expect(await c.rows()).toHaveLength(2);
  });
});
