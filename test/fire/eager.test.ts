import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, receiver } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { openOutbox, rowsOf, tableName } from '../relay/support.js';
import { describeEachDialect, sqlOf } from '../support/dialects.js';

describeEachDialect('eager receivers', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Signed = event({ schema: z.object({ userId: z.string() }) });

  function config(options: { fail?: () => boolean; lane?: string } = {}) {
    const seen: { receiver: string; attempt: number }[] = [];
    const outboxConfig = defineOutbox({
      events: { 'auth.SignedUp': Signed },
      receivers: {
        'mail.welcome': receiver(Signed, {
          eager: true,
          lane: options.lane,
          handle: (_e, ctx) => {
            if (options.fail?.()) throw new Error('smtp refused');
            seen.push({ receiver: 'mail.welcome', attempt: ctx.attempt });
          },
        }),
        'crm.sync': receiver(Signed, {
          handle: () => void seen.push({ receiver: 'crm.sync', attempt: 1 }),
        }),
      },
    });
    return { config: outboxConfig, seen };
  }

  it('attempts the delivery right after commit, in the firing process, with no relay running', async () => {
    const { config: c, seen } = config();
    const outbox = await openOutbox(db, c);
    await db.sequelize.transaction(async (t) => {
      await outbox.fire('auth.SignedUp', { userId: 'u1' }, { transaction: t });
      expect(seen).toEqual([]); // not before the commit
    });
    expect(seen).toEqual([{ receiver: 'mail.welcome', attempt: 1 }]);
    expect((await rowsOf(outbox, 'mail.welcome'))[0]).toMatchObject({
      status: 'succeeded',
      attempts: 1,
    });
    // the receiver declared without eager is left to the relay
    expect((await rowsOf(outbox, 'crm.sync'))[0].status).toBe('pending');
    expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 1 });
    expect(seen.map((s) => s.receiver)).toEqual(['mail.welcome', 'crm.sync']);
  });

  it('attempts nothing for a transaction that rolled back', async () => {
    const { config: c, seen } = config();
    const outbox = await openOutbox(db, c);
    await expect(
      db.sequelize.transaction(async (t) => {
        await outbox.fire('auth.SignedUp', { userId: 'u1' }, { transaction: t });
        throw new Error('the sign-up failed');
      }),
    ).rejects.toThrow('the sign-up failed');
    expect(seen).toEqual([]);
    expect(await rowsOf(outbox, 'mail.welcome')).toEqual([]);
  });

  it('leaves a failed eager attempt to the relay, which retries it as any failed attempt', async () => {
    let failing = true;
    const { config: c, seen } = config({ fail: () => failing });
    const outbox = await openOutbox(db, c);
    await outbox.fire('auth.SignedUp', { userId: 'u1' });
    const [failed] = await rowsOf(outbox, 'mail.welcome');
    expect(failed).toMatchObject({
      status: 'failed',
      attempts: 1,
      lastError: 'Error: smtp refused',
    });

    failing = false;
    await drainOutbox(outbox);
    expect(seen).toContainEqual({ receiver: 'mail.welcome', attempt: 2 });
    expect((await rowsOf(outbox, 'mail.welcome'))[0]).toMatchObject({
      status: 'succeeded',
      attempts: 2,
    });
  });

  it('runs in the firing process whatever its lane', async () => {
    const { config: c, seen } = config({ lane: 'mail' });
    const outbox = await openOutbox(db, c);
    await outbox.fire('auth.SignedUp', { userId: 'u1' });
    expect(seen).toEqual([{ receiver: 'mail.welcome', attempt: 1 }]);
  });

  it('does not overtake an earlier event of its ordering key, which the relay delivers in order', async () => {
    let failing = true;
    const { config: c } = config({ fail: () => failing });
    const outbox = await openOutbox(db, c);
    await outbox.fire('auth.SignedUp', { userId: 'u1' }, { orderingKey: 'u1' }); // fails eagerly
    failing = false;
    await outbox.fire('auth.SignedUp', { userId: 'u1' }, { orderingKey: 'u1' }); // held back
    const rows = await rowsOf(outbox, 'mail.welcome');
    expect(rows.map((r) => [r.status, r.attempts])).toEqual([
      ['failed', 1],
      ['pending', 0],
    ]);
    await drainOutbox(outbox);
    expect((await rowsOf(outbox, 'mail.welcome')).map((r) => r.status)).toEqual([
      'succeeded',
      'succeeded',
    ]);
  });

  it("commits an eager handler's database work with its acknowledgement", async () => {
    const table = tableName(db, 'welcomed');
    await sqlOf(db.sequelize).run(`CREATE TABLE ${table} (user_id varchar(20) PRIMARY KEY)`, []);
    const c = defineOutbox({
      events: { 'auth.SignedUp': Signed },
      receivers: {
        'mail.welcome': receiver(Signed, {
          eager: true,
          handle: async (e, ctx) => {
            await sqlOf(db.sequelize).run(
              `INSERT INTO ${table} (user_id) VALUES ($1)`,
              [e.payload.userId],
              ctx.transaction,
            );
          },
        }),
      },
    });
    const outbox = await openOutbox(db, c);
    await outbox.fire('auth.SignedUp', { userId: 'u7' });
    expect(await sqlOf(db.sequelize).select(`SELECT user_id FROM ${table}`, [])).toEqual([
      { user_id: 'u7' },
    ]);
    expect((await rowsOf(outbox, 'mail.welcome'))[0].status).toBe('succeeded');
  });

  it('is refused beside inline and onCommit at declaration', () => {
    expect(() =>
      defineOutbox({
        events: { 'auth.SignedUp': Signed },
        receivers: { x: receiver(Signed, { mode: 'onCommit', eager: true, handle: () => {} }) },
      }),
    ).toThrow('receivers.x.eager needs a durable receiver (mode is "onCommit")');
  });
});
