import { QueryTypes } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect, isMariadb } from '../support/dialects.js';

const config = defineOutbox({
  events: { 'a.Happened': event({ schema: z.object({ n: z.number() }) }) },
  receivers: { 'r.one': receiver('a.Happened', { handle: () => {} }) },
});

describeEachDialect('migrate()', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('is idempotent and safe when two processes migrate at once', async () => {
    const a = createOutbox(config, { ...db.outboxOptions, wakeup: null, logger: silentLogger });
    const other = db.connectAgain();
    const b = createOutbox(config, {
      ...db.outboxOptions,
      sequelize: other,
      wakeup: null,
      logger: silentLogger,
    });
    await Promise.all([a.migrate(), b.migrate(), a.migrate()]);
    await a.migrate();
    const versions = await db.sequelize.query(
      `SELECT version FROM ${db.outboxOptions.schema ? `"${db.outboxOptions.schema}".` : ''}"outbox_migrations" ORDER BY version`,
      { type: QueryTypes.SELECT },
    );
    expect(versions).toEqual([
      { version: 1 },
      { version: 2 },
      { version: 3 },
      { version: 4 },
      { version: 5 },
      { version: 6 },
    ]);
    // And the tables work from both connections.
    await a.fire('a.Happened', { n: 1 });
    await b.fire('a.Happened', { n: 2 });
    expect((await a.countDeliveries()).pending).toBe(2);
  });

  /** The definitions of a table's indexes, as the database prints them. */
  const indexesOf = async (table: string) =>
    isMariadb(dialect.name)
      ? // MariaDB prints a table's indexes inside its CREATE TABLE: one KEY line each.
        (
          await db.sequelize.query<Record<string, string>>(`SHOW CREATE TABLE \`${table}\``, {
            type: QueryTypes.SELECT,
          })
        )
          .flatMap((r) => String(r['Create Table']).split('\n'))
          .filter((line) => /\bKEY\b/.test(line))
          .map((line) => ({ indexdef: line.trim() }))
      : dialect.name === 'postgres'
        ? await db.sequelize.query<{ indexdef: string }>(
            `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2`,
            { bind: [db.outboxOptions.schema, table], type: QueryTypes.SELECT },
          )
        : await db.sequelize.query<{ indexdef: string }>(
            `SELECT sql AS indexdef FROM sqlite_master WHERE type = 'index' AND tbl_name = $1 AND sql IS NOT NULL`,
            { bind: [table], type: QueryTypes.SELECT },
          );
  /** An owed row's phase, as this dialect's indexes spell it (src/storage/sql/phase.ts). */
  const owed =
    dialect.name === 'postgres'
      ? /phase\)?::text = 'owed'|phase = 'owed'/
      : /status IN \('pending','failed','claimed'\)/;

  it('creates the indexes that serve the claim (partial where the database has them)', async () => {
    const rows = await indexesOf('outbox_deliveries');
    if (isMariadb(dialect.name)) {
      // No partial indexes: each leads with the stored phase, so the owed rows are one range.
      const def = (name: string) =>
        rows.find((r) => r.indexdef.includes(`\`outbox_${name}\``))?.indexdef;
      expect(def('deliveries_queue')).toMatch(/\(`phase`,`event_id`,`id`\)/);
      expect(def('deliveries_ordering')).toMatch(/`ordering_key`\(191\),`phase`,`event_id`\)/);
      expect(def('deliveries_dead_letters')).toMatch(/\(`phase`,`completed_at`,`id`\)/);
      for (const gone of ['ready', 'leased', 'key', 'lost', 'dead', 'scheduled', 'owed', 'event'])
        expect(def(`deliveries_${gone}`)).toBeUndefined();
      return;
    }
    // The owed rows by event sequence, claimed ones included, on the phase (migration 4):
    // a claim changes no indexed column (a HOT update on PostgreSQL). Migration 3's
    // deliveries_ready and deliveries_leased are gone, and so are the indexes on status.
    const queue = rows.find((r) => r.indexdef.includes('outbox_deliveries_queue'));
    expect(queue?.indexdef).toMatch(/\(event_id, id\) WHERE /);
    expect(queue?.indexdef).toMatch(owed);
    for (const gone of ['ready', 'leased', 'key', 'lost', 'dead', 'scheduled', 'owed', 'event'])
      expect(rows.some((r) => r.indexdef.includes(`"outbox_deliveries_${gone}"`))).toBe(false);
    if (dialect.name === 'postgres')
      for (const r of rows) expect(r.indexdef).not.toMatch(/\bstatus\b/);
    const ordering = rows.find((r) => r.indexdef.includes('outbox_deliveries_ordering'));
    expect(ordering?.indexdef).toMatch(/ordering_key IS NOT NULL/);
  });

  it('holds the idempotency key unique with a partial index of the keyed events, and drops events_name', async () => {
    const rows = await indexesOf('outbox_events');
    const idempotency = rows.find((r) => r.indexdef.includes('outbox_events_idempotency'));
    if (isMariadb(dialect.name)) {
      // A unique index holds any number of NULLs on MariaDB: no partial index needed.
      expect(idempotency?.indexdef).toMatch(/^UNIQUE KEY .*\(`idempotency_key`\)/);
      expect(rows.some((r) => r.indexdef.includes('outbox_events_name'))).toBe(false);
      return;
    }
    expect(idempotency?.indexdef).toMatch(/UNIQUE INDEX/);
    expect(idempotency?.indexdef).toMatch(/WHERE \(?idempotency_key IS NOT NULL/);
    expect(rows.some((r) => r.indexdef.includes('outbox_events_name'))).toBe(false);
    if (dialect.name === 'postgres') {
      // The column's UNIQUE of migration 1, with a NULL for every keyless event, is gone.
      const constraints = await db.sequelize.query<{ conname: string }>(
        `SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'u'`,
        { bind: [`"${db.outboxOptions.schema}".outbox_events`], type: QueryTypes.SELECT },
      );
      expect(constraints.map((c) => c.conname)).toEqual(['outbox_events_uuid_key']);
    }
  });

  it.skipIf(dialect.name !== 'postgres')(
    'gives the deliveries table its phase, generated from the status, and room on each page for updates',
    async () => {
      const [table] = await db.sequelize.query<{ reloptions: string[] | null }>(
        `SELECT reloptions FROM pg_class WHERE oid = $1::regclass`,
        { bind: [`"${db.outboxOptions.schema}".outbox_deliveries`], type: QueryTypes.SELECT },
      );
      expect(table?.reloptions).toEqual(['fillfactor=40']);
      const [column] = await db.sequelize.query<{ generated: string }>(
        `SELECT attgenerated AS generated FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'phase'`,
        { bind: [`"${db.outboxOptions.schema}".outbox_deliveries`], type: QueryTypes.SELECT },
      );
      expect(column?.generated).toBe('s');
    },
  );

  // A never-analyzed table has no statistics (reltuples -1 on PostgreSQL 14+), and the
  // planner's guess for it made a claim 8x slower until autovacuum came round.
  it.skipIf(dialect.name !== 'postgres')(
    'analyzes the tables it creates, so the first claims are planned from statistics',
    async () => {
      const outbox = createOutbox(config, {
        ...db.outboxOptions,
        tablePrefix: 'analyzed_',
        wakeup: null,
        logger: silentLogger,
      });
      await outbox.migrate();
      const tables = await db.sequelize.query<{ relname: string; reltuples: number }>(
        `SELECT c.relname, c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname LIKE 'analyzed\\_%' ORDER BY c.relname`,
        { bind: [db.outboxOptions.schema], type: QueryTypes.SELECT },
      );
      expect(tables.map((t) => t.relname)).toEqual([
        'analyzed_deliveries',
        'analyzed_events',
        'analyzed_migrations',
        'analyzed_receiver_last_success',
      ]);
      // -1 is "never analyzed"; an analyzed table counts its rows (0 or more).
      const unanalyzed = tables.filter((t) => Number(t.reltuples) < 0).map((t) => t.relname);
      expect(unanalyzed).toEqual([]);
    },
  );

  // SQLite never refreshes statistics by itself: an ANALYZE of the new, empty tables would
  // leave its planner believing them empty for good.
  it.skipIf(dialect.name !== 'sqlite')(
    'leaves SQLite without statistics that would freeze the new tables as empty',
    async () => {
      const outbox = createOutbox(config, {
        ...db.outboxOptions,
        tablePrefix: 'unanalyzed_',
        wakeup: null,
        logger: silentLogger,
      });
      await outbox.migrate();
      const statTables = await db.sequelize.query<{ name: string }>(
        `SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'`,
        { type: QueryTypes.SELECT },
      );
      const stats =
        statTables.length === 0
          ? []
          : await db.sequelize.query<{ tbl: string }>(
              `SELECT tbl FROM sqlite_stat1 WHERE tbl LIKE 'unanalyzed%'`,
              { type: QueryTypes.SELECT },
            );
      expect(stats).toEqual([]);
    },
  );

  it('a table prefix keeps two outboxes apart in one database', async () => {
    const a = createOutbox(config, {
      ...db.outboxOptions,
      tablePrefix: 'first_',
      wakeup: null,
      logger: silentLogger,
    });
    const b = createOutbox(config, {
      ...db.outboxOptions,
      tablePrefix: 'second_',
      wakeup: null,
      logger: silentLogger,
    });
    await a.migrate();
    await b.migrate();
    await a.fire('a.Happened', { n: 1 });
    expect((await a.countDeliveries()).pending).toBe(1);
    expect((await b.countDeliveries()).pending).toBe(0);
  });
});
