import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, receiver } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { EventRowInput, OutboxStore } from '../../src/storage/store.js';
import type { TestDatabase } from '../../testing/databases.js';
import { openOutbox } from '../relay/support.js';
import { DIALECTS, dialectAvailable, isMariadb } from '../support/dialects.js';

const config = defineOutbox({
  events: { 'a.Happened': event({ schema: z.object({ n: z.number() }) }) },
  receivers: { 'r.one': receiver('a.Happened', { handle: () => {} }) },
});

const row = (
  orderingKey: string | null,
  n: number,
  idempotencyKey: string | null = null,
): EventRowInput => ({
  uuid: randomUUID(),
  name: 'a.Happened',
  version: 1,
  payload: JSON.stringify({ n }),
  headers: '{}',
  orderingKey,
  idempotencyKey,
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

/** Whether `work` settles within `ms`. */
const settlesWithin = async (work: Promise<unknown>, ms: number) => {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = await Promise.race([work.then(() => true), late]);
  clearTimeout(timer);
  return settled;
};

/**
 * MariaDB's ordering-key locks (src/storage/mariadb/key-locks.ts, PostgreSQL's advisory slot
 * locks as row locks on a slots table) and its idempotent insert, between two writers at
 * once: a second transaction firing a key the first holds waits for it, so the key's ids
 * follow commit order; a key's duplicate in a second transaction waits, then writes nothing
 * and fails nothing.
 */
for (const dialect of DIALECTS.filter((d) => isMariadb(d.name)))
  describe.skipIf(!dialectAvailable(dialect.name))(
    `two writers on MariaDB [${dialect.name}]`,
    () => {
      let db: TestDatabase;
      let store: OutboxStore;
      beforeAll(async () => {
        db = await dialect.open();
        store = runtimeOf(await openOutbox(db, config)).store;
      });
      afterAll(() => db.cleanup());

      it("a second transaction firing a key the first holds waits for its commit; the key's ids follow commit order", async () => {
        const other = db.connectAgain();
        const first = await db.sequelize.transaction();
        const [a] = await store.insertEvents([row('order-1', 1)], first);
        const second = other.transaction(async (t) => store.insertEvents([row('order-1', 2)], t));
        // Another key is not held up.
        const unrelated = other.transaction(async (t) =>
          store.insertEvents([row('order-2', 3)], t),
        );
        expect(await settlesWithin(unrelated, 5_000)).toBe(true);
        expect(await settlesWithin(second, 500)).toBe(false);
        await first.commit();
        const [b] = await second;
        expect(Number(b!.sequence)).toBeGreaterThan(Number(a!.sequence));
      });

      it('a duplicate idempotency key in a concurrent transaction waits, then writes nothing, and its transaction goes on', async () => {
        const other = db.connectAgain();
        const first = await db.sequelize.transaction();
        const [a] = await store.insertEvents([row(null, 1, 'once')], first);
        const second = other.transaction(async (t) => {
          const [written] = await store.insertEvents([row(null, 2, 'once')], t);
          // The transaction is still usable after the duplicate.
          const [more] = await store.insertEvents([row(null, 3)], t);
          return { written, more };
        });
        expect(await settlesWithin(second, 500)).toBe(false);
        await first.commit();
        const { written, more } = await second;
        expect(written).toMatchObject({ sequence: a!.sequence, inserted: false });
        expect(more!.inserted).toBe(true);
      });
    },
  );
