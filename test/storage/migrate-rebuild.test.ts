/**
 * Migration 5 on a filled outbox: SQLite's events table rebuilt without the column UNIQUE
 * on idempotency_key that migration 4 could not drop there. Tables made by migrations 1-4,
 * filled by this release's fire() with keyed and keyless events, the newest ones pruned (so
 * the AUTOINCREMENT counter is past the largest id left), then `migrate()`: every event kept
 * with its id and key, the key still unique, no id given twice, everything owed delivered.
 * On PostgreSQL, migration 5 is only its version row.
 */
import { QueryTypes } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import { migrationStatements } from '../../src/storage/migration-statements.js';
import { tableNames } from '../../src/storage/tables.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/drain.js';
import { openOutbox } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const EVENTS = 30;
/** Every third event an idempotency key; the rest without one. */
const idempotencyKey = (n: number) => (n % 3 === 0 ? `idem-${n}` : undefined);

describeEachDialect('migration 5 on a filled outbox', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('keeps every event, its id and key; the key stays unique, no id is given again, and what is owed is delivered once', async () => {
    const prefix = 'rebuilt_';
    const t = tableNames(prefix, db.outboxOptions.schema);
    const script = migrationStatements(dialect.name, t);
    const step5 = script.steps.find((s) => s.version === 5)!.statements;
    if (dialect.name !== 'sqlite') {
      // Nothing but the row recording it applied.
      expect(step5).toHaveLength(1);
      expect(step5[0]).toMatch(/^INSERT (IGNORE )?INTO .*migrations/);
    }
    await db.sequelize.transaction(async (transaction) => {
      for (const sql of [
        ...script.prelude,
        ...script.steps.filter((s) => s.version <= 4).flatMap((s) => s.statements),
        // Migration 6's events.tenant, which this release's fire() below writes (NULL),
        // without its version row: migration 5 rebuilds the table from the columns of the
        // migrations before it, and 6 then adds it again, as a real upgrade does.
        ...script.steps
          .filter((s) => s.version === 6)
          .flatMap((s) => s.statements)
          .filter((sql) => !sql.includes(t.migrations)),
      ])
        await db.sequelize.query(sql, { transaction });
    });

    const delivered: number[] = [];
    const Happened = event({ schema: z.object({ n: z.number() }) });
    const config = defineOutbox({
      events: { 'a.Happened': Happened },
      receivers: { 'r.a': receiver(Happened, { handle: (e) => void delivered.push(e.payload.n) }) },
    });
    const writer = createOutbox(config, {
      ...db.outboxOptions,
      tablePrefix: prefix,
      wakeup: null,
      logger: silentLogger,
    });
    const fired = [
      ...(await writer.fireMany(
        Array.from({ length: EVENTS }, (_, n) => ({
          name: 'a.Happened' as const,
          payload: { n },
          orderingKey: `k${n % 4}`,
          idempotencyKey: idempotencyKey(n),
        })),
      )),
    ];
    await writer.close();
    // The newest five events gone (as a prune or an operator leaves them): the counter is
    // now past the largest id in the table.
    const gone = fired.slice(-5).map((e) => e.sequence);
    await db.sequelize.query(`DELETE FROM ${t.deliveries} WHERE event_id IN (${gone.join(', ')})`);
    await db.sequelize.query(`DELETE FROM ${t.events} WHERE id IN (${gone.join(', ')})`);
    const kept = fired.slice(0, -5);

    const indexesOfEvents = () =>
      db.sequelize.query<{ name: string; sql: string | null }>(
        `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = '${prefix}events' ORDER BY name`,
        { type: QueryTypes.SELECT },
      );
    const before = dialect.name === 'sqlite' ? await indexesOfEvents() : [];
    if (dialect.name === 'sqlite') {
      // Before: the column UNIQUE of uuid and of idempotency_key, beside events_idempotency.
      expect(before.filter((i) => i.sql === null).map((i) => i.name)).toEqual([
        `sqlite_autoindex_${prefix}events_1`,
        `sqlite_autoindex_${prefix}events_2`,
      ]);
    }

    const outbox = await openOutbox(db, config, { tablePrefix: prefix }); // migration 5
    const versions = await db.sequelize.query<{ version: number }>(
      `SELECT version FROM ${t.migrations} ORDER BY version`,
      { type: QueryTypes.SELECT },
    );
    expect(versions.map((v) => Number(v.version))).toEqual([1, 2, 3, 4, 5, 6]);
    if (dialect.name === 'sqlite') {
      // After: uuid's UNIQUE only, and the same indexes of the migrations as before.
      const after = await indexesOfEvents();
      expect(after.filter((i) => i.sql === null).map((i) => i.name)).toEqual([
        `sqlite_autoindex_${prefix}events_1`,
      ]);
      expect(after.filter((i) => i.sql !== null)).toEqual(before.filter((i) => i.sql !== null));
      expect(after.find((i) => i.name === `${prefix}events_idempotency`)?.sql).toMatch(
        /UNIQUE INDEX .* WHERE idempotency_key IS NOT NULL/,
      );
      const [table] = await db.sequelize.query<{ sql: string }>(
        `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '${prefix}events'`,
        { type: QueryTypes.SELECT },
      );
      expect(table.sql).toMatch(/uuid TEXT NOT NULL UNIQUE/);
      expect(table.sql).not.toMatch(/idempotency_key TEXT UNIQUE/);
      expect(table.sql).toMatch(/AUTOINCREMENT/);
    }

    // Every event kept, with its id, uuid and key.
    const rows = await db.sequelize.query<{ id: number; uuid: string; k: string | null }>(
      `SELECT id, uuid, idempotency_key AS k FROM ${t.events} ORDER BY id`,
      { type: QueryTypes.SELECT },
    );
    expect(rows.map((r) => [String(r.id), r.uuid])).toEqual(kept.map((e) => [e.sequence, e.id]));
    expect(rows.map((r) => r.k)).toEqual(kept.map((_, n) => idempotencyKey(n) ?? null));

    // A key written before the migration still answers with its event, and writes nothing.
    const again = await outbox.fire('a.Happened', { n: 3 }, { idempotencyKey: 'idem-3' });
    expect(again.id).toBe(kept[3].id);
    // A uuid stays unique.
    await expect(
      db.sequelize.query(
        `INSERT INTO ${t.events} (uuid, name, payload, headers, occurred_at, recorded_at)
         VALUES ('${kept[0].id}', 'x', '{}', '{}', ${dialect.name === 'sqlite' ? '0, 0' : 'now(), now()'})`,
      ),
    ).rejects.toMatchObject({ name: 'SequelizeUniqueConstraintError' });
    // No id a removed event had is given again.
    const next = await outbox.fire('a.Happened', { n: EVENTS }, { orderingKey: 'k0' });
    expect(Number(next.sequence)).toBeGreaterThan(Number(fired.at(-1)!.sequence));

    await drainOutbox(outbox);
    const owed = [...kept.map((_, n) => n), EVENTS];
    expect([...delivered].sort((a, b) => a - b)).toEqual(owed);
    for (let k = 0; k < 4; k++) {
      const ofKey = delivered.filter((n) => n % 4 === k);
      expect(ofKey).toEqual([...ofKey].sort((a, b) => a - b));
    }
    expect(await outbox.countDeliveries()).toMatchObject({ succeeded: owed.length, pending: 0 });
    await outbox.close();
  });
});
