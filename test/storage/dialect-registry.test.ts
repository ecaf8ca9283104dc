import { randomBytes } from 'node:crypto';
import { DataTypes, type Sequelize, type Transaction } from 'sequelize';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  createOutbox,
  defineOutbox,
  event,
  inbox,
  inboxMigrationSql,
  silentLogger,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import {
  capabilitiesOf,
  type DatabaseCapabilities,
  type DialectName,
  dialectEntries,
  dialectNamed,
  dialectOf,
  dialectOfUrl,
  fileDatabaseUrl,
  listUrlPrefixes,
  storeCapabilities,
  supportedDialects,
  tableNames,
  wakeupRefusal,
} from '../../src/storage/index.js';
import { migrationStatements } from '../../src/storage/migration-statements.js';
import { listenNotifyWakeup } from '../../src/wakeups/listen-notify.js';
import {
  mariadbTestDatabase,
  mysqlTestDatabase,
  postgresTestSchema,
  sqliteTestDatabase,
  type TestDatabase,
} from '../../testing/databases.js';

/**
 * The dialect registry (`src/storage/dialects.ts`): an unknown dialect is refused naming
 * the supported ones, every entry carries every capability, and each capability is what
 * the dialect's database really does — checked by running the statement it promises (or
 * refuses) on a real database of that dialect.
 */

/** A test database per dialect of the registry: a new dialect must add its own here. */
const DATABASES: Record<DialectName, { open: () => Promise<TestDatabase>; up: () => boolean }> = {
  postgres: { open: postgresTestSchema, up: () => inject('pgAvailable') },
  sqlite: { open: sqliteTestDatabase, up: () => true },
  mariadb: { open: () => mariadbTestDatabase(), up: () => inject('mariadbAvailable') },
  mysql: { open: mysqlTestDatabase, up: () => inject('mariadbAvailable') },
};

/** Every capability, with the shape its value has; typed so a new one must be added here. */
const CAPABILITY_SHAPES: Record<keyof DatabaseCapabilities, (v: unknown) => boolean> = {
  listenNotify: isBoolean,
  returning: isPerKind,
  modelReturning: isPerKind,
  rowLocks: isBoolean,
  skipLocked: isBoolean,
  savepoints: isBoolean,
  schemas: isBoolean,
  jsonType: (v) => typeof v === 'string' && v.length > 0,
  singleWriter: isBoolean,
  writeTransaction: (v) =>
    typeof v === 'object' &&
    v !== null &&
    Object.keys(v).every((k) => k === 'type') &&
    [undefined, 'DEFERRED', 'IMMEDIATE', 'EXCLUSIVE'].includes((v as { type?: string }).type),
  upsertUpdatedSql: (v) => v === null || (typeof v === 'string' && v.length > 0),
};

function isBoolean(v: unknown): boolean {
  return typeof v === 'boolean';
}
function isPerKind(v: unknown): boolean {
  return (
    typeof v === 'object' &&
    v !== null &&
    Object.keys(v).sort().join() === 'delete,insert,update' &&
    Object.values(v).every(isBoolean)
  );
}

/** A Sequelize-shaped object of a dialect outboxkit has no entry for. */
const foreign = (dialect: string) =>
  ({ getDialect: () => dialect, query: () => {}, transaction: () => {} }) as unknown as Sequelize;

const config = defineOutbox({ events: { 'a.Happened': event({ schema: z.object({}) }) } });

describe('the dialect registry', () => {
  it('refuses an unknown dialect with a ConfigurationError naming every supported one', () => {
    expect(() => dialectOf(foreign('mssql'))).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: outboxkit supports postgres (PostgreSQL), sqlite (SQLite), mariadb (MariaDB) and mysql (MySQL); this Sequelize uses "mssql"]`,
    );
    expect(() =>
      createOutbox(config, { sequelize: foreign('mssql') }),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: createOutbox(config, { sequelize }): outboxkit supports postgres (PostgreSQL), sqlite (SQLite), mariadb (MariaDB) and mysql (MySQL); this Sequelize uses "mssql"]`,
    );
    expect(() => inbox(foreign('db2'))).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: inbox(sequelize): outboxkit supports postgres (PostgreSQL), sqlite (SQLite), mariadb (MariaDB) and mysql (MySQL); this Sequelize uses "db2"]`,
    );
    expect(() => capabilitiesOf('oracle', { who: '--dialect', found: 'got' })).toThrow(
      ConfigurationError,
    );
    for (const refuse of [
      () => dialectNamed('oracle'),
      () => migrationStatements('oracle' as DialectName, tableNames('outbox_', undefined)),
      () => inboxMigrationSql('oracle' as DialectName),
    ]) {
      const error = catchError(refuse);
      expect(error).toBeInstanceOf(ConfigurationError);
      for (const name of supportedDialects()) expect(error.message).toContain(name);
      expect(error.message).toContain('"oracle"');
    }
  });

  it('lists each dialect once, by the name Sequelize reports', () => {
    const names = supportedDialects();
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(dialectNamed(name).name).toBe(name);
    expect(dialectEntries().map((d) => d.name)).toEqual(names);
  });

  it('every entry carries every capability, each of its shape, and every factory', () => {
    const keys = Object.keys(CAPABILITY_SHAPES).sort();
    for (const entry of dialectEntries()) {
      expect(Object.keys(entry.capabilities).sort(), entry.name).toEqual(keys);
      for (const [key, ok] of Object.entries(CAPABILITY_SHAPES)) {
        const value = entry.capabilities[key as keyof DatabaseCapabilities];
        expect(ok(value), `${entry.name}.capabilities.${key} = ${JSON.stringify(value)}`).toBe(
          true,
        );
      }
      expect(Object.isFrozen(entry.capabilities), entry.name).toBe(true);
      expect(typeof entry.title).toBe('string');
      for (const f of [
        entry.runner,
        entry.configureConnections,
        entry.createStore,
        entry.connection.dialectOptions,
      ])
        expect(typeof f).toBe('function');
      expect(typeof entry.migration.profile).toBe('function');
      expect(typeof entry.migration.exclusively).toBe('function');
      expect(entry.connection.urlPrefixes.length).toBeGreaterThan(0);
      // What the DDL spells a JSON column as is the capability's JSON type.
      expect(entry.sql.ddl.columnType('json')).toBe(entry.capabilities.jsonType);
      // A file database has no port; a schema-less one no current-schema query.
      expect(entry.connection.defaultPort === undefined).toBe(entry.connection.file);
      expect(entry.connection.currentSchemaSql !== undefined).toBe(entry.capabilities.schemas);
      // One writer at a time means the writing transaction takes its lock up front.
      expect(entry.capabilities.writeTransaction.type === 'IMMEDIATE').toBe(
        entry.capabilities.singleWriter,
      );
      // Sequelize cannot hand back rows the database's SQL cannot return.
      for (const kind of ['insert', 'update', 'delete'] as const)
        if (entry.capabilities.modelReturning[kind])
          expect(entry.capabilities.returning[kind], `${entry.name} ${kind}`).toBe(true);
    }
  });

  it('finds a dialect by a URL, a file database with its path, and lists the URL starts', () => {
    expect(dialectOfUrl('postgres://u@h/db')?.name).toBe('postgres');
    expect(dialectOfUrl('postgresql://u@h/db')?.name).toBe('postgres');
    expect(dialectOfUrl('sqlite:./app.sqlite')?.name).toBe('sqlite');
    expect(dialectOfUrl('mssql://h/db')).toBeUndefined();
    expect(fileDatabaseUrl('sqlite://data/app.sqlite')).toMatchObject({ path: 'data/app.sqlite' });
    expect(fileDatabaseUrl('sqlite::memory:')).toMatchObject({ path: ':memory:' });
    expect(fileDatabaseUrl('postgres://u@h/db')).toBeUndefined();
    expect(listUrlPrefixes()).toMatchInlineSnapshot(
      `"postgres://, postgresql://, sqlite:, mariadb:// or mysql://"`,
    );
  });

  it('says what a wakeup needs of a database, from the capabilities', () => {
    const postgres = dialectNamed('postgres');
    const sqlite = dialectNamed('sqlite');
    const notify = { notifyInWrite: { channel: 'c' } };
    expect(wakeupRefusal(postgres, notify)).toBeUndefined();
    expect(wakeupRefusal(sqlite, notify)).toMatchInlineSnapshot(
      `"needs PostgreSQL (LISTEN/NOTIFY)"`,
    );
    expect(wakeupRefusal(sqlite, {})).toBeUndefined();
    expect(wakeupRefusal(sqlite, { dialects: ['postgres'] })).toBe('needs postgres');
    expect(listenNotifyWakeup().capabilities.dialects).toEqual(
      dialectEntries()
        .filter((d) => d.capabilities.listenNotify)
        .map((d) => d.name),
    );
  });

  it('has a test database for every dialect', () => {
    expect(Object.keys(DATABASES).sort()).toEqual([...supportedDialects()].sort());
  });
});

for (const entry of dialectEntries()) {
  const database = DATABASES[entry.name as DialectName];
  describe.skipIf(!database.up())(`the ${entry.name} entry's capabilities [${entry.name}]`, () => {
    const c = entry.capabilities;
    let db: TestDatabase;
    let sequelize: Sequelize;
    let schema: string | undefined;
    const run = () => entry.runner(sequelize);
    /** Whether the server is MariaDB (the mysql entry is tested against it here). */
    const serverIsMariadb = async () =>
      db.dialect === 'mariadb' ||
      (db.dialect === 'mysql' &&
        /mariadb/i.test(
          String((await run().select<{ v: string }>('SELECT VERSION() AS v', []))[0]?.v),
        ));
    /** A fresh table of (id, v), named and escaped: `"schema"."probe_…"`. */
    const table = async (extra = '') => {
      const name = `probe_${randomBytes(4).toString('hex')}`;
      const q = schema ? `"${schema}"."${name}"` : `"${name}"`;
      await run().run(
        `CREATE TABLE ${q} (id ${entry.sql.ddl.columnType('integer')} PRIMARY KEY, v ${entry.sql.ddl.columnType('text')}${extra})`,
        [],
      );
      await run().run(`INSERT INTO ${q} (id, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')`, []);
      return { name, q };
    };
    /** Whether `work` settles before `ms` elapse. */
    const settlesWithin = async (work: Promise<unknown>, ms: number) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      });
      const settled = await Promise.race([work.then(() => true), late]);
      clearTimeout(timer);
      return settled;
    };

    beforeAll(async () => {
      db = await database.open();
      sequelize = db.sequelize;
      schema = db.outboxOptions.schema;
      entry.configureConnections(sequelize);
    });
    afterAll(() => db?.cleanup());

    it('is the entry its Sequelize and its URL resolve to', () => {
      expect(dialectOf(sequelize)).toBe(entry);
      expect(dialectOfUrl(db.url)).toBe(entry);
      const storage = (sequelize as unknown as { options: { storage?: string } }).options.storage;
      expect(storage !== undefined).toBe(entry.connection.file);
    });

    for (const kind of ['insert', 'update', 'delete'] as const) {
      it(`${kind.toUpperCase()} … RETURNING ${c.returning[kind] ? 'returns the rows written' : 'is refused'}`, async () => {
        const { q } = await table();
        const sql = {
          insert: `INSERT INTO ${q} (id, v) VALUES (4, 'd') RETURNING id, v`,
          update: `UPDATE ${q} SET v = 'z' WHERE id <= 2 RETURNING id, v`,
          delete: `DELETE FROM ${q} WHERE id = 3 RETURNING id, v`,
        }[kind];
        // The mysql entry is tested against MariaDB here, whose SQL has what MySQL's has
        // not: the store never relies on it, which is all the entry promises.
        const unchecked = entry.name === 'mysql' && (await serverIsMariadb());
        const rows = run().select<{ id: number; v: string }>(sql, []);
        if (!c.returning[kind] && unchecked) return void (await rows.catch(() => {}));
        if (!c.returning[kind]) return expect(rows).rejects.toThrow();
        const got = (await rows).map((r) => ({ id: Number(r.id), v: r.v }));
        expect(got.sort((a, b) => a.id - b.id)).toEqual(
          {
            insert: [{ id: 4, v: 'd' }],
            update: [
              { id: 1, v: 'z' },
              { id: 2, v: 'z' },
            ],
            delete: [{ id: 3, v: 'c' }],
          }[kind],
        );
      });
    }

    it(`Sequelize's model statements with returning: true ${JSON.stringify(c.modelReturning)} write RETURNING as the entry says`, async () => {
      const statements: string[] = [];
      const name = `model_${randomBytes(4).toString('hex')}`;
      const Model = sequelize.define(
        name,
        { n: DataTypes.INTEGER },
        { tableName: name, timestamps: false, ...(schema ? { schema } : {}) },
      );
      await Model.sync();
      const logging = (sql: string) => statements.push(sql);
      const said = async (work: () => Promise<unknown>) => {
        statements.length = 0;
        await work();
        return statements.some((s) => /\bRETURNING\b/i.test(s));
      };
      expect(
        await said(() => Model.bulkCreate([{ n: 1 }, { n: 2 }], { returning: true, logging })),
      ).toBe(c.modelReturning.insert);
      expect(
        await said(() => Model.update({ n: 5 }, { where: {}, returning: true, logging })),
      ).toBe(c.modelReturning.update);
      expect(
        await said(() =>
          Model.destroy({ where: { n: 5 }, logging, ...({ returning: true } as object) }),
        ),
      ).toBe(c.modelReturning.delete);
      await Model.drop();
    });

    it(`SELECT … FOR UPDATE is ${c.rowLocks ? 'a row lock' : 'refused'}`, async () => {
      const { q } = await table();
      const locked = sequelize.transaction((t) =>
        run().select(`SELECT id FROM ${q} WHERE id = 1 FOR UPDATE`, [], t),
      );
      if (!c.rowLocks) return expect(locked).rejects.toThrow();
      await expect(locked).resolves.toHaveLength(1);
    });

    it(`FOR UPDATE SKIP LOCKED ${c.skipLocked ? 'passes over rows another transaction locked' : 'is refused'}`, async () => {
      const { q } = await table();
      const skipping = (t: Transaction) =>
        run().select<{ id: number }>(
          `SELECT id FROM ${q} ORDER BY id FOR UPDATE SKIP LOCKED`,
          [],
          t,
        );
      if (!c.skipLocked) return expect(sequelize.transaction(skipping)).rejects.toThrow();
      const other = db.connectAgain();
      entry.configureConnections(other);
      const held = await sequelize.transaction();
      try {
        await run().select(`SELECT id FROM ${q} WHERE id = 1 FOR UPDATE`, [], held);
        const seen = await other.transaction((t) =>
          entry
            .runner(other)
            .select<{ id: number }>(
              `SELECT id FROM ${q} ORDER BY id FOR UPDATE SKIP LOCKED`,
              [],
              t,
            ),
        );
        expect(seen.map((r) => Number(r.id))).toEqual([2, 3]);
      } finally {
        await held.rollback();
      }
    });

    it(`a SAVEPOINT ${c.savepoints ? 'rolls back part of a transaction' : 'is refused'}`, async () => {
      const { q } = await table();
      const partly = sequelize.transaction(async (t) => {
        await run().run('SAVEPOINT probe', [], t);
        await run().run(`DELETE FROM ${q} WHERE id = 1`, [], t);
        await run().run('ROLLBACK TO SAVEPOINT probe', [], t);
        await run().run(`DELETE FROM ${q} WHERE id = 2`, [], t);
      });
      if (!c.savepoints) return expect(partly).rejects.toThrow();
      await partly;
      const left = await run().select<{ id: number }>(`SELECT id FROM ${q} ORDER BY id`, []);
      expect(left.map((r) => Number(r.id))).toEqual([1, 3]);
    });

    it(`CREATE SCHEMA ${c.schemas ? 'makes a schema a table can live in' : 'is refused, or is a database of its own (MariaDB)'}`, async () => {
      const name = `s_${randomBytes(4).toString('hex')}`;
      const created = run().run(`CREATE SCHEMA "${name}"`, []);
      if (!c.schemas && (await serverIsMariadb())) {
        // MariaDB's CREATE SCHEMA is CREATE DATABASE: another database, not a namespace
        // inside this one, and no query says which one unqualified names resolve to.
        await created;
        await run().run(`DROP SCHEMA "${name}"`, []);
        return expect(entry.connection.currentSchemaSql).toBeUndefined();
      }
      if (!c.schemas) return expect(created).rejects.toThrow();
      await created;
      try {
        await run().run(`CREATE TABLE "${name}"."t" (id integer)`, []);
        const rows = await run().select<{ schema: string }>(entry.connection.currentSchemaSql!, []);
        expect(rows).toHaveLength(1);
        expect(typeof rows[0]?.schema).toBe('string');
      } finally {
        await run().run(`DROP SCHEMA "${name}" CASCADE`, []);
      }
    });

    it(`a ${c.jsonType} column stores a JSON document and reads it back`, async () => {
      const { q } = await table(`, doc ${c.jsonType}`);
      await run().run(`UPDATE ${q} SET doc = '{"a":[1,"x"]}' WHERE id = 1`, []);
      const [row] = await run().select<{ doc: unknown }>(`SELECT doc FROM ${q} WHERE id = 1`, []);
      const doc = typeof row?.doc === 'string' ? JSON.parse(row.doc) : row?.doc;
      expect(doc).toEqual({ a: [1, 'x'] });
    });

    it(`${c.singleWriter ? 'one writing transaction at a time: a second writer waits for the first' : 'two transactions write at once'}`, async () => {
      const { q } = await table();
      const other = db.connectAgain();
      entry.configureConnections(other);
      const first = await sequelize.transaction(
        c.writeTransaction.type ? { type: c.writeTransaction.type as Transaction.TYPES } : {},
      );
      let second: Promise<unknown> | undefined;
      try {
        await run().run(`UPDATE ${q} SET v = 'first' WHERE id = 1`, [], first);
        second = other.transaction(
          c.writeTransaction.type ? { type: c.writeTransaction.type as Transaction.TYPES } : {},
          (t) => entry.runner(other).run(`UPDATE ${q} SET v = 'second' WHERE id = 2`, [], t),
        );
        expect(await settlesWithin(second, 500)).toBe(!c.singleWriter);
      } finally {
        await first.commit();
        await second;
      }
    });

    it(`the write transaction's options ${c.writeTransaction.type ? `(${c.writeTransaction.type}) take the write lock at BEGIN` : 'are the default ones'}`, async () => {
      const { q } = await table();
      const other = db.connectAgain();
      entry.configureConnections(other);
      // A write transaction that has only read so far.
      const reader = await sequelize.transaction(
        c.writeTransaction.type ? { type: c.writeTransaction.type as Transaction.TYPES } : {},
      );
      let write: Promise<unknown> | undefined;
      try {
        await run().select(`SELECT v FROM ${q} WHERE id = 1`, [], reader);
        write = entry.runner(other).run(`UPDATE ${q} SET v = 'other' WHERE id = 3`, []);
        expect(await settlesWithin(write, 500)).toBe(c.writeTransaction.type !== 'IMMEDIATE');
      } finally {
        await reader.commit();
        await write;
      }
    });

    it(`NOTIFY ${c.listenNotify ? 'reaches a listener when its transaction commits, never for a rollback' : 'is refused'}`, async () => {
      const channel = `probe_${randomBytes(4).toString('hex')}`;
      const notify = (t: Transaction) => run().run(`NOTIFY ${channel}, 'x'`, [], t);
      if (!c.listenNotify) return expect(sequelize.transaction(notify)).rejects.toThrow();
      const { default: pg } = await import('pg');
      const listener = new pg.Client({ connectionString: db.url });
      const heard: string[] = [];
      listener.on('notification', (m) => heard.push(m.payload ?? ''));
      await listener.connect();
      try {
        await listener.query(`LISTEN ${channel}`);
        await sequelize
          .transaction(async (t) => {
            await run().run(`NOTIFY ${channel}, 'rolled back'`, [], t);
            throw new Error('roll back');
          })
          .catch(() => {});
        await sequelize.transaction(notify);
        await expect.poll(() => heard).toEqual(['x']);
      } finally {
        await listener.end();
      }
    });

    it(`an upsert's row ${c.upsertUpdatedSql ? `says whether it was updated (${c.upsertUpdatedSql})` : 'cannot say whether it was updated, so none is claimed'}`, async () => {
      const { q } = await table();
      if (!c.upsertUpdatedSql) return expect(c.upsertUpdatedSql).toBeNull();
      const rows = await sequelize.transaction(async (t) => {
        await run().run(
          `INSERT INTO ${q} (id, v) VALUES (1, 'again'), (9, 'new') ON CONFLICT (id) DO UPDATE SET v = excluded.v`,
          [],
          t,
        );
        return run().select<{ id: number; updated: unknown }>(
          `SELECT id, ${c.upsertUpdatedSql} AS updated FROM ${q} WHERE id IN (1, 2, 9) ORDER BY id`,
          [],
          t,
        );
      });
      expect(rows.map((r) => [Number(r.id), Boolean(r.updated)])).toEqual([
        [1, true],
        [2, false],
        [9, false],
      ]);
    });

    it('its store tells the relay what the capabilities imply, and migrates', async () => {
      const tables = tableNames(`reg${randomBytes(3).toString('hex')}_`, schema);
      const store = entry.createStore(sequelize, tables);
      expect(store.capabilities).toEqual(storeCapabilities(c));
      expect(store.relayLock === undefined).toBe(store.capabilities.splitsQueue);
      await store.migrate();
      const outbox = createOutbox(config, {
        ...db.outboxOptions,
        tablePrefix: tables.prefix,
        wakeup: null,
        logger: silentLogger,
      });
      expect(runtimeOf(outbox).store.capabilities).toEqual(storeCapabilities(c));
      const [now] = await run().select<{ now: unknown }>(
        `SELECT ${entry.migration.nowSql} AS now`,
        [],
      );
      const ms = now?.now instanceof Date ? now.now.getTime() : Number(now?.now);
      expect(Math.abs(ms - Date.now())).toBeLessThan(60_000);
    });

    it(`the schema option is ${c.schemas ? 'taken' : 'refused, naming the dialects that have schemas'}`, () => {
      const make = () =>
        createOutbox(config, { sequelize, schema: 'app', wakeup: null, logger: silentLogger });
      if (c.schemas) return expect(make).not.toThrow();
      expect(make).toThrow(ConfigurationError);
      expect(() => inbox(sequelize, { schema: 'app' })).toThrow(/has no schemas/);
    });

    it(`a LISTEN/NOTIFY wakeup is ${c.listenNotify ? 'taken' : 'refused before anything is written'}`, () => {
      const make = () =>
        createOutbox(config, {
          ...db.outboxOptions,
          wakeup: listenNotifyWakeup({ logger: silentLogger }),
          logger: silentLogger,
        });
      if (c.listenNotify) return expect(make).not.toThrow();
      expect(make).toThrow(/listen-notify needs .* \(LISTEN\/NOTIFY\)/);
    });
  });
}

function catchError(f: () => unknown): Error {
  try {
    f();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}
