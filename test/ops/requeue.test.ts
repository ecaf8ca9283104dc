import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineOutbox,
  event,
  type Outbox,
  RetryAfter,
  receiver,
  ValidationError,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/drain.js';
import { capturingStatements, deliveryRows, openOutbox, T0, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import { statuses } from './support.js';

const DAY = 24 * 3600_000;
const Loan = event({ schema: z.object({ n: z.number() }) });

/**
 * Three topics, one receiver each, all failing while `failing` says so (one attempt each,
 * so a drain dead-letters at once), recording what they delivered.
 */
function libraryConfig(options: { batchSize?: number } = {}) {
  const state = { failing: true };
  const ran: string[] = [];
  const handle = (key: string) => (e: { payload: { n: number } }) => {
    if (state.failing) throw new Error(`${key} is down (event ${e.payload.n})`);
    ran.push(`${key} ${e.payload.n}`);
  };
  const config = defineOutbox({
    events: {
      'library.loan.updated': Loan,
      'library.book.added': event({ schema: Loan.schema }),
      'shop.sold': event({ schema: Loan.schema }),
    },
    receivers: {
      'library.loans': receiver('library.loan.updated', {
        handle: handle('library.loans'),
        maxAttempts: 1,
      }),
      'library.books': receiver('library.book.added', {
        handle: handle('library.books'),
        maxAttempts: 1,
      }),
      'shop.ledger': receiver('shop.sold', { handle: handle('shop.ledger'), maxAttempts: 1 }),
    },
    settings: options.batchSize ? { batchSize: options.batchSize } : {},
  });
  return { config, state, ran };
}

describeEachDialect('requeueDead and deadLetters', (dialect) => {
  let db: TestDatabase;
  const clock = testClock();
  let library: ReturnType<typeof libraryConfig>;
  let outbox: Outbox<ReturnType<typeof libraryConfig>['config']>;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());
  beforeEach(async () => {
    clock.set(T0);
    library = libraryConfig();
    outbox = await openOutbox(db, library.config, { clock: clock.now });
  });

  /** Fire one event of each topic (n = 1, 2, 3) and dead-letter all three. */
  async function threeDead() {
    const fired = await outbox.fireMany([
      { name: 'library.loan.updated', payload: { n: 1 } },
      { name: 'library.book.added', payload: { n: 2 } },
      { name: 'shop.sold', payload: { n: 3 } },
    ]);
    await drainOutbox(outbox);
    expect(await outbox.countDeliveries()).toMatchObject({ dead: 3 });
    return fired;
  }

  it('a dead row gets its budget back: pending, attempts zero, its error kept, and is delivered again', async () => {
    await threeDead();
    clock.advance(DAY);
    expect(await outbox.requeueDead({ receiverKey: 'library.loans' })).toBe(1);
    const row = (await deliveryRows(outbox)).find((r) => r.receiverKey === 'library.loans')!;
    expect(row).toMatchObject({
      status: 'pending',
      attempts: 0,
      completedAt: null,
      lastError: 'Error: library.loans is down (event 1)',
    });
    library.state.failing = false;
    await drainOutbox(outbox);
    expect(library.ran).toEqual(['library.loans 1']);
  });

  it("with a transaction, every chunk runs in it: it commits with the caller's writes, or not at all", async () => {
    // Chunks of one row: three chunks, all in the caller's transaction.
    library = libraryConfig({ batchSize: 1 });
    outbox = await openOutbox(db, library.config, { clock: clock.now });
    await threeDead();
    const rolledBack = db.sequelize.transaction(async (transaction) => {
      expect(await outbox.requeueDead({ transaction })).toBe(3);
      throw new Error('the audit row could not be written');
    });
    await expect(rolledBack).rejects.toThrow('the audit row could not be written');
    expect(await outbox.countDeliveries()).toMatchObject({ dead: 3, pending: 0 });
    await db.sequelize.transaction(async (transaction) => {
      expect(await outbox.requeueDead({ receiverKey: 'shop.ledger', transaction })).toBe(1);
    });
    expect(await outbox.countDeliveries()).toMatchObject({ dead: 2, pending: 1 });
  });

  it('a requeued row is owed from the requeue', async () => {
    let calls = 0;
    const config = defineOutbox({
      events: { 'library.loan.updated': Loan },
      receivers: {
        'library.sync': receiver(Loan, {
          handle: () => {
            calls += 1;
            if (calls === 1) throw new Error('down');
            throw new RetryAfter(60, { counts: false, message: 'throttled' });
          },
          maxAttempts: 1,
          giveUpAfter: { days: 1 },
        }),
      },
    });
    const sync = await openOutbox(db, config, { clock: clock.now });
    await sync.fire('library.loan.updated', { n: 1 });
    await drainOutbox(sync);
    expect((await deliveryRows(sync))[0].status).toBe('dead');
    clock.advance(30 * DAY);
    expect(await sync.requeueDead()).toBe(1);
    const [requeued] = await deliveryRows(sync);
    expect([requeued.availableAt, requeued.dueAt]).toEqual([clock.now(), clock.now()]);
    // Its first deferral is measured from the requeue, a moment ago: deferred, not dead.
    await drainOutbox(sync, { respectBackoff: true });
    const [row] = await deliveryRows(sync);
    expect([row.status, row.attempts]).toEqual(['failed', 0]);
  });

  it('it can be scoped by row: a named row that is not dead is left alone', async () => {
    await threeDead();
    const [loans, books] = await deliveryRows(outbox);
    await outbox.fire('shop.sold', { n: 4 });
    const pending = (await deliveryRows(outbox)).at(-1)!;
    expect(await outbox.requeueDead({ deliveryIds: [loans.id, Number(pending.id)] })).toBe(1);
    expect(Object.values(await statuses(outbox))).toEqual(['pending', 'dead', 'dead', 'pending']);
    expect(await outbox.requeueDead({ deliveryIds: [] })).toBe(0);
    expect(await outbox.requeueDead({ deliveryIds: [books.id], receiverKey: 'shop.ledger' })).toBe(
      0,
    );
  });

  it('topics take names and prefix patterns as the relay’s do', async () => {
    await threeDead();
    expect(await outbox.requeueDead({ topics: ['librar_.*'] })).toBe(0); // _ is a plain character
    expect(await outbox.requeueDead({ topics: [] })).toBe(0);
    expect(await outbox.requeueDead({ topics: ['library.*'] })).toBe(2);
    expect(Object.values(await statuses(outbox))).toEqual(['pending', 'pending', 'dead']);
    expect(await outbox.requeueDead({ topics: ['shop.sold'] })).toBe(1);
    await expect(outbox.requeueDead({ topics: ['lib*rary'] })).rejects.toThrowError(
      /topics\[0\] "lib\*rary" is not a topic pattern/,
    );
    await expect(outbox.requeueDead({ topics: ['library.?'] })).rejects.toThrow(ValidationError);
  });

  it('cancelled rows are never requeued', async () => {
    const placed = await outbox.fire('shop.sold', { n: 1 });
    await outbox.cancelDeliveries([placed]);
    expect(await outbox.requeueDead()).toBe(0);
    expect(Object.values(await statuses(outbox))).toEqual(['cancelled']);
  });

  it('a dead letter holds back its ordering key until it is requeued', async () => {
    await outbox.fire('shop.sold', { n: 1 }, { orderingKey: 'till-1' });
    await drainOutbox(outbox);
    library.state.failing = false;
    await outbox.fire('shop.sold', { n: 2 }, { orderingKey: 'till-1' });
    await drainOutbox(outbox);
    expect(library.ran).toEqual([]);
    expect(await outbox.requeueDead()).toBe(1);
    await drainOutbox(outbox);
    expect(library.ran).toEqual(['shop.ledger 1', 'shop.ledger 2']);
  });

  it('it works in chunks of settings.batchSize, oldest event first, up to limit', async () => {
    const small = libraryConfig({ batchSize: 2 });
    const chunked = await openOutbox(db, small.config, { clock: clock.now });
    await chunked.fireMany(
      Array.from({ length: 5 }, (_, n) => ({ name: 'shop.sold' as const, payload: { n } })),
    );
    await drainOutbox(chunked);
    expect(await chunked.requeueDead({ limit: 3 })).toBe(3);
    expect(Object.values(await statuses(chunked))).toEqual([
      'pending',
      'pending',
      'pending',
      'dead',
      'dead',
    ]);
    await drainOutbox(chunked); // dead again
    let requeued = 0;
    const statements = await capturingStatements(db.sequelize, async () => {
      requeued = await chunked.requeueDead();
    });
    expect(requeued).toBe(5);
    // Three chunks of at most two rows, each its own write.
    expect(statements.filter((s) => /SET status = 'pending', attempts = 0/.test(s))).toHaveLength(
      3,
    );
  });

  it('deadLetters lists them newest first with their errors, event names and ids', async () => {
    const fired = await outbox.fireMany([{ name: 'shop.sold', payload: { n: 1 } }]);
    await drainOutbox(outbox);
    clock.advance(60_000);
    const more = await outbox.fireMany([
      { name: 'library.loan.updated', payload: { n: 2 } },
      { name: 'shop.sold', payload: { n: 3 } },
    ]);
    await drainOutbox(outbox);
    const letters = await outbox.deadLetters();
    expect(letters.map((l) => [l.eventName, l.eventId, l.receiverKey, l.lastError])).toEqual([
      ['shop.sold', more[1].id, 'shop.ledger', 'Error: shop.ledger is down (event 3)'],
      [
        'library.loan.updated',
        more[0].id,
        'library.loans',
        'Error: library.loans is down (event 2)',
      ],
      ['shop.sold', fired[0].id, 'shop.ledger', 'Error: shop.ledger is down (event 1)'],
    ]);
    expect(letters[0]).toMatchObject({ attempts: 1, maxAttempts: 1, target: '' });
    expect(letters[2].deadAt).toEqual(T0);
    expect((await outbox.deadLetters({ receiverKey: 'shop.ledger', limit: 1 })).length).toBe(1);
    expect((await outbox.deadLetters({ receiverKey: 'library.loans' }))[0].eventSequence).toBe(
      more[0].sequence,
    );
    await expect(outbox.deadLetters({ limit: 0 })).rejects.toThrow(ValidationError);
  });
});
