/**
 * A schema per tenant (`settings.tenancy: 'schema'`, PostgreSQL): each tenant's outbox
 * tables live in its schema; one relay serves a declared set of schemas round robin, so no
 * tenant starves another; `migrate({ schemas })` migrates them all. Each test's tenant
 * schemas are named after the file's own schema (`<t_…>_<tenant>`) and dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import { DataTypes, type ModelStatic, type Model as SequelizeModel } from 'sequelize';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  capture,
  createOutbox,
  defineOutbox,
  event,
  installCapture,
  listenNotifyWakeup,
  type Outbox,
  type OutboxWakeup,
  PermanentFailure,
  receiver,
  silentLogger,
  ValidationError,
  withTenant,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { postgresTestSchema, postgresUrl, type TestDatabase } from '../../testing/databases.js';
import { captureLogger, openOutbox, testClock } from '../relay/support.js';

type Seen = { tenant: string | null; context: string | null; n: number };

function schemaConfig(seen: Seen[], options: { failing?: boolean } = {}) {
  return defineOutbox({
    events: { 'shop.Placed': event({ schema: z.object({ n: z.number() }) }) },
    receivers: {
      'shop.log': receiver('shop.Placed', {
        handle: (e, context) => {
          if (options.failing) throw new PermanentFailure('refused');
          seen.push({
            tenant: e.tenant ?? null,
            context: context.tenant ?? null,
            n: (e.payload as { n: number }).n,
          });
        },
      }),
    },
    settings: { tenancy: 'schema' },
  });
}

describe.skipIf(!inject('pgAvailable'))('tenants: a schema per tenant [postgres]', () => {
  let db: TestDatabase;
  /** Every tenant schema a test made, dropped afterwards. */
  const made = new Set<string>();
  let base: string;
  /** The schema of a tenant: the file's schema, then the tenant. */
  const tenantSchema = (tenant: string) => {
    const schema = `${base}_${tenant}`;
    made.add(schema);
    return schema;
  };
  const open = async (seen: Seen[], tenants: readonly string[], failing = false) => {
    const outbox = await openOutbox(db, schemaConfig(seen, { failing }), { tenantSchema });
    if (tenants.length > 0) await outbox.migrate({ schemas: tenants.map(tenantSchema) });
    return outbox;
  };
  /** How many events a schema's outbox holds (read with the table names it was made with). */
  const eventsIn = async (outbox: Outbox, tenant: string) => {
    const rt = runtimeOf(outbox).tenantSchemas!.runtimeOf(tenantSchema(tenant));
    return rt.store.readEvents({});
  };

  beforeAll(async () => {
    db = await postgresTestSchema();
    base = db.outboxOptions.schema!;
  });
  afterAll(async () => {
    for (const schema of made)
      await db.sequelize.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await db.cleanup();
  });

  it('migrate({ schemas }) creates each schema and its outbox tables, and runs again unchanged', async () => {
    const outbox = await open([], ['m1', 'm2']);
    await outbox.migrate({ schemas: [tenantSchema('m1'), tenantSchema('m2')] });
    const [rows] = await db.sequelize.query(
      `SELECT table_schema AS schema, count(*)::int AS tables FROM information_schema.tables
        WHERE table_schema IN ('${tenantSchema('m1')}', '${tenantSchema('m2')}') GROUP BY 1 ORDER BY 1`,
    );
    // events, deliveries, receiver_last_success, migrations (PostgreSQL has no relay lock table)
    expect(rows).toEqual([
      { schema: tenantSchema('m1'), tables: 4 },
      { schema: tenantSchema('m2'), tables: 4 },
    ]);
    await expect(outbox.migrate({ schemas: [] })).rejects.toThrow(
      'migrate({ schemas }) must be a non-empty array of schema names (got [])',
    );
    await expect(outbox.migrate({ schemas: ['a', 'a'] })).rejects.toThrow(
      'names the schema a twice',
    );
    await outbox.close();
  });

  it('migrate({ schemas }) adds the declared event columns in every schema; an event carries its columns there', async () => {
    const delivered: unknown[] = [];
    const config = defineOutbox({
      events: { 'shop.Placed': event({ schema: z.object({ n: z.number() }) }) },
      receivers: {
        'shop.log': receiver('shop.Placed', { handle: (e) => void delivered.push(e.columns) }),
      },
      eventColumns: { order_id: { type: 'bigint', index: true } },
      settings: { tenancy: 'schema' },
    });
    const outbox = await openOutbox(db, config, { tenantSchema });
    await outbox.migrate({ schemas: [tenantSchema('c1'), tenantSchema('c2')] });
    const [columns] = await db.sequelize.query(
      `SELECT table_schema AS schema, data_type AS type FROM information_schema.columns
        WHERE table_schema IN ('${tenantSchema('c1')}', '${tenantSchema('c2')}')
          AND table_name = '${runtimeOf(outbox).tables.prefix}events' AND column_name = 'order_id' ORDER BY 1`,
    );
    expect(columns).toEqual([
      { schema: tenantSchema('c1'), type: 'bigint' },
      { schema: tenantSchema('c2'), type: 'bigint' },
    ]);
    await outbox.fire('shop.Placed', { n: 1 }, { tenant: 'c2', columns: { order_id: 42 } });
    await outbox.runRelay({ tenants: ['c1', 'c2'], untilIdle: true });
    expect(delivered).toEqual([{ order_id: '42' }]);
    await outbox.close();
  });

  it('each tenant’s events are written to its schema, in the caller’s transaction', async () => {
    const outbox = await open([], ['w_acme', 'w_globex']);
    await outbox.fire('shop.Placed', { n: 1 }, { tenant: 'w_acme' });
    await withTenant('w_globex', () => outbox.fire('shop.Placed', { n: 2 }));
    // A rollback leaves nothing in the tenant's schema.
    await db.sequelize
      .transaction(async (transaction) => {
        await outbox.fire('shop.Placed', { n: 3 }, { tenant: 'w_acme', transaction });
        throw new Error('rolled back');
      })
      .catch(() => {});
    const acme = await eventsIn(outbox, 'w_acme');
    const globex = await eventsIn(outbox, 'w_globex');
    expect(acme.map((e) => [e.tenant, (e.payload as { n: number }).n])).toEqual([['w_acme', 1]]);
    expect(globex.map((e) => [e.tenant, (e.payload as { n: number }).n])).toEqual([
      ['w_globex', 2],
    ]);
    // The outbox's own schema holds no tenant's event.
    expect(await runtimeOf(outbox).store.readEvents({})).toEqual([]);
    await outbox.close();
  });

  it('an event without a tenant is refused, and so is one call of two tenants: nothing is written', async () => {
    const outbox = await open([], ['r_acme', 'r_globex']);
    await expect(outbox.fire('shop.Placed', { n: 1 })).rejects.toThrow(ValidationError);
    await expect(outbox.fire('shop.Placed', { n: 1 })).rejects.toThrow(
      "fire(): shop.Placed names no tenant, but this outbox keeps a schema per tenant (settings.tenancy: 'schema'), so an event without one has no schema to go to; fire it inside withTenant(tenant, …) or with { tenant }; nothing was written",
    );
    await expect(
      outbox.fireMany([
        { name: 'shop.Placed', payload: { n: 1 }, tenant: 'r_acme' },
        { name: 'shop.Placed', payload: { n: 2 }, tenant: 'r_globex' },
      ]),
    ).rejects.toThrow('fireMany()[1]: shop.Placed is the tenant "r_globex"\'s');
    expect(await eventsIn(outbox, 'r_acme')).toEqual([]);
    expect(await eventsIn(outbox, 'r_globex')).toEqual([]);
    await outbox.close();
  });

  it('a tenant name that is no schema name needs a tenantSchema of its own', async () => {
    const outbox = await openOutbox(db, schemaConfig([]));
    await expect(outbox.fire('shop.Placed', { n: 1 }, { tenant: 'acme-corp' })).rejects.toThrow(
      'the schema of the tenant "acme-corp" (createOutbox({ tenantSchema }) maps a tenant name that is no schema name to one): a schema must be 1 to 51 letters, digits and _, not starting with a digit (got "acme-corp")',
    );
    await outbox.close();
  });

  it('idempotency keys are per schema: one key in two tenants is two events, a repeat in one is the stored event', async () => {
    const outbox = await open([], ['k_acme', 'k_globex']);
    const a = await outbox.fire(
      'shop.Placed',
      { n: 1 },
      { tenant: 'k_acme', idempotencyKey: 'order:7' },
    );
    const b = await outbox.fire(
      'shop.Placed',
      { n: 2 },
      { tenant: 'k_globex', idempotencyKey: 'order:7' },
    );
    const again = await outbox.fire(
      'shop.Placed',
      { n: 3 },
      { tenant: 'k_acme', idempotencyKey: 'order:7' },
    );
    expect(b.duplicate).toBe(false);
    expect(again).toMatchObject({ duplicate: true, id: a.id, payload: { n: 1 } });
    await outbox.close();
  });

  it('one relay serves its declared schemas; each delivery names its tenant', async () => {
    const seen: Seen[] = [];
    const outbox = await open(seen, ['d_acme', 'd_globex', 'd_other']);
    await outbox.fire('shop.Placed', { n: 1 }, { tenant: 'd_acme' });
    await outbox.fire('shop.Placed', { n: 2 }, { tenant: 'd_globex' });
    await outbox.fire('shop.Placed', { n: 3 }, { tenant: 'd_other' });
    const report = await outbox.runRelay({
      schemas: [tenantSchema('d_acme'), tenantSchema('d_globex')],
      untilIdle: true,
      summaryIntervalMs: 0,
    });
    expect(report.succeeded).toBe(2);
    expect(seen.sort((x, y) => x.n - y.n)).toEqual([
      { tenant: 'd_acme', context: 'd_acme', n: 1 },
      { tenant: 'd_globex', context: 'd_globex', n: 2 },
    ]);
    // The schema it was not given keeps its event; `tenants` names schemas by tenant.
    await outbox.runRelay({ tenants: ['d_other'], untilIdle: true, summaryIntervalMs: 0 });
    expect(seen.map((s) => s.n).sort()).toEqual([1, 2, 3]);
    await outbox.close();
  });

  it('a tenant’s backlog never starves another: a quiet tenant’s events go in the first rounds, not after the backlog', async () => {
    const seen: Seen[] = [];
    const outbox = await open(seen, ['f_busy', 'f_quiet']);
    await outbox.fireMany(
      Array.from({ length: 40 }, (_, i) => ({
        name: 'shop.Placed' as const,
        payload: { n: i },
        tenant: 'f_busy',
        orderingKey: 'backlog',
      })),
    );
    await outbox.fireMany(
      [100, 101, 102].map((n) => ({
        name: 'shop.Placed' as const,
        payload: { n },
        tenant: 'f_quiet',
      })),
    );
    await outbox.runRelay({
      schemas: [tenantSchema('f_busy'), tenantSchema('f_quiet')],
      batchSize: 5,
      concurrency: 1,
      untilIdle: true,
      summaryIntervalMs: 0,
    });
    expect(seen).toHaveLength(43);
    // Claims go round the schemas: the busy tenant's first batch (5), then the quiet one's.
    const quiet = seen.flatMap((s, i) => (s.tenant === 'f_quiet' ? [i] : []));
    expect(Math.max(...quiet)).toBeLessThan(10);
    // Each tenant's own order holds.
    expect(seen.filter((s) => s.tenant === 'f_busy').map((s) => s.n)).toEqual(
      Array.from({ length: 40 }, (_, i) => i),
    );
    await outbox.close();
  });

  const wakeups: readonly (readonly [string, () => OutboxWakeup | undefined])[] = [
    ['in-process', () => undefined],
    [
      'LISTEN/NOTIFY',
      () =>
        listenNotifyWakeup({
          channel: `obk_${randomBytes(5).toString('hex')}`,
          logger: silentLogger,
          connection: { connectionString: postgresUrl() },
        }),
    ],
  ];
  it.each(wakeups)(
    'an idle relay of several schemas is woken by a write to any of them (%s)',
    async (_name, wakeupOf) => {
      const seen: Seen[] = [];
      const outbox = await openOutbox(db, schemaConfig(seen), { tenantSchema, wakeup: wakeupOf() });
      await outbox.migrate({ schemas: [tenantSchema('u_acme'), tenantSchema('u_globex')] });
      const stop = new AbortController();
      let idles = 0;
      const relay = outbox.runRelay({
        schemas: [tenantSchema('u_acme'), tenantSchema('u_globex')],
        signal: stop.signal,
        summaryIntervalMs: 0,
        // An idle wait that only a wakeup (or the stop) ends: no poll reaches the event.
        sleep: (_ms, signal) =>
          new Promise<void>((resolve) => {
            idles += 1;
            signal.addEventListener('abort', () => resolve(), { once: true });
          }),
      });
      // Idle once (a whole round found nothing), and listening by then.
      while (idles === 0) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 200));
      await outbox.fire('shop.Placed', { n: 9 }, { tenant: 'u_globex' });
      for (let i = 0; i < 400 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
      stop.abort();
      await relay;
      expect(seen).toEqual([{ tenant: 'u_globex', context: 'u_globex', n: 9 }]);
      await outbox.close();
    },
  );

  it('a schema whose claims keep failing gives the relay up, naming the schema, though the others’ claims succeed', async () => {
    const seen: Seen[] = [];
    const clock = testClock();
    const logger = captureLogger();
    const outbox = await openOutbox(db, schemaConfig(seen), {
      tenantSchema,
      clock: clock.now,
      logger,
    });
    await outbox.migrate({ schemas: [tenantSchema('g_ok')] }); // g_missing is never migrated
    await outbox.fire('shop.Placed', { n: 1 }, { tenant: 'g_ok' });
    const error = await outbox
      .runRelay({
        schemas: [tenantSchema('g_ok'), tenantSchema('g_missing')],
        maxNonTransientErrorMs: 10_000,
        summaryIntervalMs: 0,
        sleep: async (ms) => {
          clock.advance(ms);
        },
      })
      .catch((e: unknown) => e);
    expect(String((error as Error).message)).toMatch(/does not exist/);
    expect(seen.map((s) => s.n)).toEqual([1]);
    expect(logger.messages('error').at(-1)).toMatch(
      new RegExp(
        `^the relay gives up: its claims of the schema ${tenantSchema('g_missing')} failed for \\d+ s with an error that is not transient \\(a missing table means: run \`npx outbox migrate --schemas ${tenantSchema('g_missing')}\`\\)$`,
      ),
    );
    await outbox.close();
  });

  it('deliverPending({ schemas }) and the operations’ { tenant } address the tenant’s schema', async () => {
    const outbox = await open([], ['o_acme', 'o_globex'], true);
    await outbox.fire('shop.Placed', { n: 1 }, { tenant: 'o_acme' });
    await outbox.fire('shop.Placed', { n: 2 }, { tenant: 'o_globex' });
    await outbox.fire('shop.Placed', { n: 3 }, { tenant: 'o_globex' });
    expect((await outbox.health({ tenant: 'o_globex' })).owed).toBe(2);
    expect((await outbox.health({ tenant: 'o_acme' })).owed).toBe(1);
    const counts = await outbox.deliverPending({
      schemas: [tenantSchema('o_acme'), tenantSchema('o_globex')],
    });
    expect(counts.dead).toBe(3);
    const dead = await outbox.deadLetters({ tenant: 'o_globex' });
    expect(dead.map((d) => d.tenant)).toEqual(['o_globex', 'o_globex']);
    expect(await outbox.requeueDead({ tenant: 'o_acme' })).toBe(1);
    expect((await outbox.health({ tenant: 'o_acme' })).owed).toBe(1);
    expect((await outbox.health({ tenant: 'o_globex' })).dead).toBe(2);
    await outbox.close();
  });

  it('a relay under schema tenancy is refused without the schemas it serves, and with excludeTenants', async () => {
    const outbox = await open([], []);
    await expect(outbox.runRelay({ untilIdle: true })).rejects.toThrow(
      "runRelay() on an outbox with a schema per tenant (settings.tenancy: 'schema') needs the schemas it serves",
    );
    await expect(outbox.runRelay({ excludeTenants: ['x'] })).rejects.toThrow(ConfigurationError);
    await expect(outbox.deliverPending()).rejects.toThrow(
      'deliverPending() on an outbox with a schema per tenant',
    );
    await outbox.close();
  });

  it('a capture’s tenant attribute and a tenantSchema without schema tenancy are refused, naming why', () => {
    const Row = db.sequelize.define(
      'Row',
      { tenantId: DataTypes.STRING },
      { tableName: 'ts_rows' },
    );
    expect(() =>
      defineOutbox({
        events: {},
        capture: [capture(Row, { app: 'x', tenant: 'tenantId' })],
        settings: { tenancy: 'schema' },
      }),
    ).toThrow('keeps a schema per tenant, where a row holds no tenant');
    const column = defineOutbox({ events: {}, settings: { tenancy: 'column' } });
    expect(() =>
      createOutbox(column, { sequelize: db.sequelize, wakeup: null, tenantSchema }),
    ).toThrow(
      "createOutbox({ tenantSchema }) maps tenants to schemas, but this outbox's settings.tenancy is 'column'; declare settings: { tenancy: 'schema' } or drop tenantSchema",
    );
  });

  describe('capture', () => {
    let Memo: ModelStatic<SequelizeModel>;
    it('a captured write goes to the schema of the withTenant() block around it', async () => {
      // The app's own table, one per tenant schema; here one table the test writes twice.
      Memo = db.sequelize.define(
        'Memo',
        { text: DataTypes.STRING },
        { tableName: 'ts_memos', timestamps: false, schema: base },
      );
      await Memo.sync();
      const seen: string[] = [];
      const config = defineOutbox({
        events: {},
        capture: [capture(Memo, { app: 'notes', operations: ['inserted'] })],
        receivers: {
          'notes.seen': receiver('notes.memo.*', {
            handle: (_e, context) => void seen.push(String(context.tenant)),
          }),
        },
        settings: { tenancy: 'schema' },
      });
      const outbox = await openOutbox(db, config, { tenantSchema });
      await outbox.migrate({ schemas: [tenantSchema('c_acme'), tenantSchema('c_globex')] });
      installCapture(outbox, db.sequelize);
      await withTenant('c_acme', () => Memo.create({ text: 'a' }));
      await withTenant('c_globex', () => Memo.create({ text: 'b' }));
      expect((await eventsIn(outbox, 'c_acme')).map((e) => e.tenant)).toEqual(['c_acme']);
      expect((await eventsIn(outbox, 'c_globex')).map((e) => e.tenant)).toEqual(['c_globex']);
      await outbox.deliverPending({ tenants: ['c_acme', 'c_globex'] });
      expect(seen.sort()).toEqual(['c_acme', 'c_globex']);
      await outbox.close();
    });
  });
});
