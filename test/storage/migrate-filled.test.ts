/**
 * Migration 4 on an outbox in service: tables made by migrations 1-3 and filled as the
 * relay of that schema leaves them — events succeeded, owed, failed, claimed under a lapsed
 * lease and under a live one, dead, with ordering keys and idempotency keys — then
 * `migrate()`, then everything delivered: in order per key and receiver, each owed row
 * once, nothing delivered again that had succeeded, nothing lost.
 */
import { QueryTypes } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createOutbox,
  defineOutbox,
  event,
  type Outbox,
  receiver,
  silentLogger,
} from '../../src/index.js';
import { migrationStatements } from '../../src/storage/migration-statements.js';
import { tableNames } from '../../src/storage/tables.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/drain.js';
import { openOutbox, T0, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const MINUTE = 60_000;
const EVENTS = 40;
/** Events 0..29 carry one of five ordering keys, 30..39 none; every seventh an idempotency key. */
const orderingKey = (n: number) => (n < 30 ? `k${n % 5}` : undefined);
const idempotencyKey = (n: number) => (n % 7 === 0 ? `idem-${n}` : undefined);

describeEachDialect('migration 4 on a filled outbox', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('keeps every row and its status, and afterwards delivers everything owed, in order per key, once', async () => {
    const prefix = 'filled_';
    const t = tableNames(prefix, db.outboxOptions.schema);
    // Migrations 1-3 only, as their own statements: the schema of the release before; and
    // migration 6's events.tenant, which this release's fire() below writes (NULL), added
    // by hand without its version row, so migrate() runs 4, 5 (SQLite: the table rebuilt
    // from the columns of migrations before 5, without it) and then 6 as a real upgrade does.
    const script = migrationStatements(dialect.name, t);
    const tenantColumn = script.steps
      .filter((s) => s.version === 6)
      .flatMap((s) => s.statements)
      .filter((sql) => !sql.includes(t.migrations));
    await db.sequelize.transaction(async (transaction) => {
      for (const sql of [
        ...script.prelude,
        ...script.steps.filter((s) => s.version <= 3).flatMap((s) => s.statements),
        ...tenantColumn,
      ])
        await db.sequelize.query(sql, { transaction });
    });

    const delivered: Record<'r.a' | 'r.b', number[]> = { 'r.a': [], 'r.b': [] };
    const Happened = event({ schema: z.object({ n: z.number() }) });
    const config = defineOutbox({
      events: { 'a.Happened': Happened },
      receivers: {
        'r.a': receiver(Happened, {
          handle: (e) => void delivered['r.a'].push(e.payload.n),
          maxAttempts: 5,
        }),
        'r.b': receiver(Happened, {
          handle: (e) => void delivered['r.b'].push(e.payload.n),
          maxAttempts: 5,
        }),
      },
    });
    const clock = testClock();
    // Written by this release's fire(), not migrated: its insert reads nothing that
    // migration 4 adds, and writes the rows the release before wrote.
    const fired: { id: string }[] = [];
    const writer = createOutbox(config, {
      ...db.outboxOptions,
      tablePrefix: prefix,
      wakeup: null,
      logger: silentLogger,
      clock: clock.now,
    });
    for (let n = 0; n < 20; n++)
      fired.push(
        await writer.fire(
          'a.Happened',
          { n },
          { orderingKey: orderingKey(n), idempotencyKey: idempotencyKey(n) },
        ),
      );
    fired.push(
      ...(await writer.fireMany(
        Array.from({ length: EVENTS - 20 }, (_, i) => ({
          name: 'a.Happened' as const,
          payload: { n: 20 + i },
          orderingKey: orderingKey(20 + i),
          idempotencyKey: idempotencyKey(20 + i),
        })),
      )),
    );
    await writer.close();

    // The states the relay of migrations 1-3 leaves rows in, written as it writes them.
    const at = (d: Date) => (dialect.name === 'postgres' ? d : d.getTime());
    const set = (
      sql: string,
      ns: readonly number[],
      receivers: readonly string[],
      bind: readonly unknown[],
    ) =>
      db.sequelize.query(
        `UPDATE ${t.deliveries} SET ${sql} WHERE receiver_key IN (${receivers.map((r) => `'${r}'`).join(', ')})
           AND event_id IN (SELECT id FROM ${t.events} WHERE ${
             dialect.name === 'postgres' ? "(payload->>'n')::int" : "json_extract(payload, '$.n')"
           } IN (${ns.join(', ')}))`,
        { bind: [...bind] },
      );
    const past = at(new Date(T0.getTime() - MINUTE));
    await set(
      `status = 'succeeded', attempts = 1, completed_at = $1, succeeded_at = $1`,
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      ['r.a', 'r.b'],
      [past],
    );
    // r.a's k0 behind a dead letter; a lapsed claim (a crashed relay) on k1 and k2; a live
    // claim on r.b's k3; a failed attempt on r.b's k4 and on a keyless event.
    await set(
      `status = 'dead', attempts = 5, completed_at = $1, last_error = 'down'`,
      [10],
      ['r.a'],
      [past],
    );
    await set(
      `status = 'claimed', claimed_by = 'crashed', claimed_at = $1, lease_until = $1`,
      [11, 12],
      ['r.a'],
      [past],
    );
    await set(
      `status = 'claimed', claimed_by = 'alive', claimed_at = $1, lease_until = $2`,
      [13],
      ['r.b'],
      [past, at(new Date(T0.getTime() + 10 * MINUTE))],
    );
    await set(
      `status = 'failed', attempts = 1, available_at = $1, last_error = 'flaky'`,
      [14, 31],
      ['r.b'],
      [past],
    );
    const counts = (outbox: Outbox) => outbox.countDeliveries();
    const outbox = await openOutbox(db, config, { tablePrefix: prefix, clock: clock.now }); // migration 4
    const before = { succeeded: 20, dead: 1, claimed: 3, failed: 2, pending: 54 };
    expect(await counts(outbox)).toMatchObject(before);

    const versions = await db.sequelize.query<{ version: number }>(
      `SELECT version FROM ${t.migrations} ORDER BY version`,
      { type: QueryTypes.SELECT },
    );
    expect(versions.map((v) => Number(v.version))).toEqual([1, 2, 3, 4, 5, 6]);
    if (dialect.name === 'postgres') {
      // The phase of every row already there, computed by the migration's rewrite.
      const phases = await db.sequelize.query<{ phase: string | null; n: number }>(
        `SELECT phase, count(*)::int AS n FROM ${t.deliveries} GROUP BY phase ORDER BY phase`,
        { type: QueryTypes.SELECT },
      );
      expect(phases).toEqual([
        { phase: 'dead', n: 1 },
        { phase: 'owed', n: 59 },
        { phase: null, n: 20 },
      ]);
    }

    // An idempotency key written before the migration still answers with its event.
    const again = await outbox.fire('a.Happened', { n: 7 }, { idempotencyKey: 'idem-7' });
    expect(again.id).toBe(fired[7]?.id);
    // New events behind the migrated ones, on the same keys.
    for (let n = EVENTS; n < EVENTS + 5; n++)
      await outbox.fire('a.Happened', { n }, { orderingKey: orderingKey(n - EVENTS) });

    await drainOutbox(outbox);
    // r.b's k3 waits on its live claim; r.a's k0 on its dead letter.
    expect(await counts(outbox)).toMatchObject({ claimed: 1, dead: 1 });
    clock.advance(11 * MINUTE); // the live lease lapses
    await drainOutbox(outbox);
    expect(await outbox.requeueDead({ receiverKey: 'r.a' })).toBe(1);
    await drainOutbox(outbox);

    const all = Array.from({ length: EVENTS + 5 - 10 }, (_, i) => i + 10);
    for (const key of ['r.a', 'r.b'] as const) {
      // Each owed row once; none of the ten that had succeeded again.
      expect([...delivered[key]].sort((a, b) => a - b)).toEqual(all);
      // In order per ordering key.
      for (let k = 0; k < 5; k++) {
        const ofKey = delivered[key].filter((n) =>
          n >= EVENTS ? n - EVENTS === k : orderingKey(n) === `k${k}`,
        );
        expect(ofKey).toEqual([...ofKey].sort((a, b) => a - b));
      }
    }
    expect(await counts(outbox)).toMatchObject({
      succeeded: 90,
      pending: 0,
      failed: 0,
      claimed: 0,
      dead: 0,
    });
    // And the prune, on the new indexes, takes them all once they are old enough.
    expect(await outbox.pruneEvents({ now: new Date(T0.getTime() + 30 * 86_400_000) })).toBe(45);
    expect(await counts(outbox)).toMatchObject({ succeeded: 0 });
    await outbox.close();
  });
});
