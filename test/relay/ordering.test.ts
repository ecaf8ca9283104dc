import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { defineOutbox, event, PermanentFailure, receiver } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect } from '../support/dialects.js';
import { openOutbox, rowsOf, shortSleep, testClock } from './support.js';

/** Labels grouped by their first letter (their key), each group in delivery order. */
const byKey = (labels: readonly string[]) =>
  Object.fromEntries(
    [...new Set(labels.map((l) => l[0]))].sort().map((k) => [k, labels.filter((l) => l[0] === k)]),
  );

describeEachDialect('relay: per-ordering-key order', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Step = event({ schema: z.object({ label: z.string() }) });

  /**
   * Two receivers of one event: `ledger` records what it gets and throws whatever
   * `refuse(label)` returns; `audit` records and always succeeds.
   */
  function setup(refuse: (label: string) => Error | undefined) {
    const ledger: string[] = [];
    const audit: string[] = [];
    const config = defineOutbox({
      events: { 'acct.Step': Step },
      receivers: {
        ledger: receiver(Step, {
          handle: (e) => {
            const error = refuse(e.payload.label);
            if (error) throw error;
            ledger.push(e.payload.label);
          },
        }),
        audit: receiver(Step, {
          deliver: async (e) => void audit.push((e.payload as { label: string }).label),
        }),
      },
    });
    return { config, ledger, audit };
  }

  const fireAll = async (
    outbox: { fire: (n: 'acct.Step', p: { label: string }, o?: object) => Promise<unknown> },
    steps: [label: string, key: string | null][],
  ) => {
    for (const [label, key] of steps)
      await outbox.fire('acct.Step', { label }, key ? { orderingKey: key } : {});
  };

  it("a key's events are delivered to each receiver strictly in sequence order, one per key per batch", async () => {
    const { config, ledger } = setup(() => undefined);
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await fireAll(outbox, [
      ['a1', 'A'],
      ['a2', 'A'],
      ['b1', 'B'],
      ['a3', 'A'],
      ['b2', 'B'],
    ]);
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    // The first claim holds the head of each key only (keys may run concurrently).
    expect([...ledger].sort()).toEqual(['a1', 'b1']);
    expect((await rowsOf(outbox, 'ledger')).map((r) => r.status)).toEqual([
      'succeeded',
      'pending',
      'succeeded',
      'pending',
      'pending',
    ]);
    await outbox.runRelay({ passes: 3, sleep: shortSleep() });
    expect(ledger.filter((l) => l.startsWith('a'))).toEqual(['a1', 'a2', 'a3']);
    expect(ledger.filter((l) => l.startsWith('b'))).toEqual(['b1', 'b2']);
  });

  it('a failed delivery holds back only its own ordering key: other keys and other receivers flow', async () => {
    let broken = true;
    const { config, ledger, audit } = setup((label) =>
      broken && label === 'a1' ? new Error('ledger locked') : undefined,
    );
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await fireAll(outbox, [
      ['a1', 'A'],
      ['b1', 'B'],
      ['a2', 'A'],
      ['b2', 'B'],
      ['a3', 'A'],
    ]);
    // Retries are scheduled in the future (fixed clock): a2, a3 must wait behind a1.
    await outbox.runRelay({ passes: 4, sleep: shortSleep() });
    expect(ledger).toEqual(['b1', 'b2']);
    expect(byKey(audit)).toEqual({ a: ['a1', 'a2', 'a3'], b: ['b1', 'b2'] });
    expect((await rowsOf(outbox, 'ledger')).map((r) => [r.status, r.attempts])).toEqual([
      ['failed', 1],
      ['succeeded', 1],
      ['pending', 0],
      ['succeeded', 1],
      ['pending', 0],
    ]);

    // Once the head succeeds, the key's later events follow, in order.
    broken = false;
    clock.advance(3_600_000);
    await outbox.runRelay({ passes: 4, sleep: shortSleep() });
    expect(ledger).toEqual(['b1', 'b2', 'a1', 'a2', 'a3']);
  });

  it('a dead-lettered delivery holds back the later events of its key, and only those', async () => {
    const { config, ledger } = setup((label) =>
      label === 'a1' ? new PermanentFailure('account closed') : undefined,
    );
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await fireAll(outbox, [
      ['a1', 'A'],
      ['a2', 'A'],
      ['b1', 'B'],
    ]);
    await outbox.runRelay({ passes: 3, sleep: shortSleep() });
    clock.advance(86_400_000);
    await outbox.runRelay({ passes: 3, sleep: shortSleep() });
    expect(ledger).toEqual(['b1']);
    expect((await rowsOf(outbox, 'ledger')).map((r) => r.status)).toEqual([
      'dead',
      'pending',
      'succeeded',
    ]);
    // The audit receiver is another receiver: it was not held back by ledger's dead letter.
    expect((await rowsOf(outbox, 'audit')).map((r) => r.status)).toEqual([
      'succeeded',
      'succeeded',
      'succeeded',
    ]);
  });

  it('events without an ordering key wait for nothing', async () => {
    const { config, ledger } = setup((label) => (label === 'n1' ? new Error('flaky') : undefined));
    const outbox = await openOutbox(db, config, { clock: testClock().now });
    await fireAll(outbox, [
      ['n1', null],
      ['n2', null],
      ['n3', null],
      ['n4', null],
    ]);
    const report = await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    // One claim took every keyless row, and the failure of the first held back none.
    expect(report.succeeded).toBe(3 + 4);
    expect([...ledger].sort()).toEqual(['n2', 'n3', 'n4']);
  });

  it('rows are never selected by a high-water mark: an earlier row owed again after later ones were delivered is still claimed', async () => {
    let fail = true;
    const { config, ledger } = setup((label) =>
      fail && label === 'x1' ? new Error('not yet') : undefined,
    );
    const clock = testClock();
    const outbox = await openOutbox(db, config, { clock: clock.now });
    await fireAll(outbox, [
      ['x1', null],
      ['x2', null],
      ['x3', null],
    ]);
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect([...ledger].sort()).toEqual(['x2', 'x3']);
    fail = false;
    clock.advance(3_600_000);
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    expect(ledger.slice(2)).toEqual(['x1']);
  });

  if (dialect.name === 'postgres') {
    // KNOWN BUG (src/fire, src/storage — the lead's): two concurrent transactions firing
    // events of ONE ordering key can commit in the opposite order of their sequences; the
    // relay then delivers the later sequence first, since the earlier row is invisible when
    // the later one is claimed. Fixing it needs the writes of one key serialised at fire
    // time (e.g. pg_advisory_xact_lock(hashtext(ordering_key)) in insertEvents), so the
    // sequence order of a key is its commit order. Remove `.fails` once that lands.
    it('two concurrent transactions firing one ordering key deliver it in sequence order', async () => {
      const { config, ledger } = setup(() => undefined);
      const outbox = await openOutbox(db, config, { clock: testClock().now });
      const first = await db.sequelize.transaction();
      const second = await db.sequelize.transaction();
      try {
        await outbox.fire(
          'acct.Step',
          { label: 'k-first' },
          { transaction: first, orderingKey: 'K' },
        );
        // With the key serialised at fire time this would wait for `first`; without it, it
        // writes a later sequence at once.
        const secondFire = outbox.fire(
          'acct.Step',
          { label: 'k-second' },
          { transaction: second, orderingKey: 'K' },
        );
        const raced = await Promise.race([
          secondFire.then(() => 'second wrote' as const),
          new Promise<'second waited'>((resolve) =>
            setTimeout(() => resolve('second waited'), 200),
          ),
        ]);
        if (raced === 'second wrote') {
          await second.commit();
          await outbox.runRelay({ passes: 1, sleep: shortSleep() });
          await first.commit();
        } else {
          await first.commit();
          await secondFire;
          await second.commit();
        }
      } finally {
        if (!(first as unknown as { finished?: string }).finished) await first.rollback();
        if (!(second as unknown as { finished?: string }).finished) await second.rollback();
      }
      await outbox.runRelay({ passes: 3, sleep: shortSleep() });
      expect(ledger).toEqual(['k-first', 'k-second']);
    });

    it('a transaction that commits late is not skipped: a lower sequence committed after a higher one was delivered is delivered', async () => {
      const { config, ledger } = setup(() => undefined);
      const outbox = await openOutbox(db, config, { clock: testClock().now });
      // Two real concurrent transactions: the first takes the lower sequence, commits last.
      const slow = await db.sequelize.transaction();
      const fast = await db.sequelize.transaction();
      try {
        const early = await outbox.fire('acct.Step', { label: 'early' }, { transaction: slow });
        const late = await outbox.fire('acct.Step', { label: 'late' }, { transaction: fast });
        expect(BigInt(early.sequence)).toBeLessThan(BigInt(late.sequence));
        await fast.commit();

        await outbox.runRelay({ passes: 1, sleep: shortSleep() });
        expect(ledger).toEqual(['late']);

        await slow.commit();
      } finally {
        // Only reached unfinished when an assertion failed above.
        if (!(slow as unknown as { finished?: string }).finished) await slow.rollback();
        if (!(fast as unknown as { finished?: string }).finished) await fast.rollback();
      }
      await outbox.runRelay({ passes: 1, sleep: shortSleep() });
      expect(ledger).toEqual(['late', 'early']);
      expect((await rowsOf(outbox, 'ledger')).map((r) => r.status)).toEqual([
        'succeeded',
        'succeeded',
      ]);
    });
  }
});
