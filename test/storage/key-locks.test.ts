import { randomUUID } from 'node:crypto';
import { QueryTypes } from 'sequelize';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PostgresStore } from '../../src/storage/postgres.js';
import type { EventRowInput } from '../../src/storage/store.js';
import { tableNames } from '../../src/storage/tables.js';
import { postgresTestSchema, type TestDatabase } from '../../testing/databases.js';

/**
 * PostgreSQL's insert serialises the writers of an ordering key with transaction-scoped
 * advisory locks. One lock per distinct key overflowed the shared lock table for a large
 * fireMany ("out of shared memory"); keys now share a fixed number of lock slots.
 */
describe.skipIf(!inject('pgAvailable'))('ordering-key locks of the insert [postgres]', () => {
  let db: TestDatabase;
  let store: PostgresStore;
  beforeAll(async () => {
    db = await postgresTestSchema();
    store = new PostgresStore(
      db.sequelize,
      tableNames('outbox_', db.outboxOptions.schema),
      undefined,
    );
    await store.migrate();
  });
  afterAll(() => db.cleanup());

  const row = (orderingKey: string | null, n: number): EventRowInput => ({
    uuid: randomUUID(),
    name: 'a.Happened',
    version: 1,
    payload: JSON.stringify({ n }),
    headers: '{}',
    orderingKey,
    idempotencyKey: null,
    occurredAt: new Date(),
    recordedAt: new Date(),
    retentionSeconds: null,
    deleteWhen: null,
    actor: null,
    correlationId: null,
    causedBy: null,
    suppressedReason: null,
    deliveries: [
      { receiverKey: 'r.one', target: '', maxAttempts: 5, availableAt: new Date(), dueAt: null },
    ],
  });

  const advisoryLocksHeld = async (transaction: import('sequelize').Transaction) =>
    (
      await db.sequelize.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`,
        { type: QueryTypes.SELECT, transaction },
      )
    )[0].n;

  it('writes 20,000 events with 20,000 distinct ordering keys in one transaction', async () => {
    const events = Array.from({ length: 20_000 }, (_, i) => row(`key-${i}`, i));
    const written = await db.sequelize.transaction(async (transaction) => {
      const result = await store.insertEvents(events, transaction);
      // The bound: however many keys, a transaction holds at most one lock per slot.
      expect(await advisoryLocksHeld(transaction)).toBeLessThanOrEqual(256);
      return result;
    });
    expect(written).toHaveLength(20_000);
    expect(written.every((w) => w.inserted)).toBe(true);
    const [{ n }] = await db.sequelize.query<{ n: number }>(
      `SELECT count(DISTINCT ordering_key)::int AS n FROM "${db.outboxOptions.schema}".outbox_deliveries`,
      { type: QueryTypes.SELECT },
    );
    expect(n).toBeGreaterThanOrEqual(20_000);
  });

  it('a second writer of the same ordering key waits for the first to commit', async () => {
    const first = await db.sequelize.transaction();
    await store.insertEvents([row('shared', 1)], first);
    const second = await db.sequelize.transaction();
    const [{ pid }] = await db.sequelize.query<{ pid: number }>('SELECT pg_backend_pid() AS pid', {
      type: QueryTypes.SELECT,
      transaction: second,
    });
    let secondDone = false;
    const secondWrite = store.insertEvents([row('shared', 2)], second).then((w) => {
      secondDone = true;
      return w;
    });
    // The second insert waits on the key's slot lock while the first is open.
    await waitFor(async () => {
      const [{ n }] = await db.sequelize.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND pid = $1`,
        { bind: [pid], type: QueryTypes.SELECT },
      );
      return n > 0;
    });
    expect(secondDone).toBe(false);
    await first.commit();
    const [w] = await secondWrite;
    await second.commit();
    expect(w.inserted).toBe(true);
  });

  it('two writers of the same keys in opposite orders queue rather than deadlock', async () => {
    const keys = Array.from({ length: 300 }, (_, i) => `opp-${i}`);
    const a = await db.sequelize.transaction();
    const b = await db.sequelize.transaction();
    try {
      const writes = [
        store.insertEvents(
          keys.map((k, i) => row(k, i)),
          a,
        ),
        store.insertEvents(
          [...keys].reverse().map((k, i) => row(k, i)),
          b,
        ),
      ];
      const first = await Promise.race(writes.map((w, i) => w.then(() => i)));
      await (first === 0 ? a : b).commit();
      const results = await Promise.all(writes);
      await (first === 0 ? b : a).commit();
      expect(results.map((r) => r.length)).toEqual([300, 300]);
    } catch (error) {
      await Promise.allSettled([a.rollback(), b.rollback()]);
      throw error;
    }
  });
});

/** Poll a condition on the database (bounded; no fixed sleeps). */
async function waitFor(condition: () => Promise<boolean>, tries = 200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('condition not met');
}
