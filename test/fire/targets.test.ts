import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AnyEvent,
  type DeliveryContext,
  type DeliveryFailure,
  defineOutbox,
  event,
  type OutboxEvent,
  PermanentFailure,
  receiver,
  ValidationError,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { openOutbox, rowsOf, tableName } from '../relay/support.js';
import { describeEachDialect, sqlOf } from '../support/dialects.js';
import { eventCount } from './support.js';

describeEachDialect('fan-out targets', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  const Published = event({ schema: z.object({ tenants: z.array(z.string()) }) });
  const Other = event({ schema: z.object({ n: z.number() }) });

  /** A fan-out receiver sending to every tenant its event names, recording what it got. */
  function fanOut(
    options: {
      targets?: (e: { payload: { tenants: string[] } }, ctx: DeliveryContext) => Iterable<string>;
      fail?: (target: string, attempt: number) => void;
    } = {},
  ) {
    const got: { target: string; attempt: number; name: string }[] = [];
    const failures: DeliveryFailure[] = [];
    const config = defineOutbox({
      events: { 'cms.Published': Published, 'cms.Other': Other },
      receivers: {
        'hooks.tenant': receiver(Published, {
          targets: (e, ctx) => (options.targets ?? ((x) => x.payload.tenants))(e, ctx),
          handle: (e, ctx) => {
            options.fail?.(ctx.target, ctx.attempt);
            got.push({ target: ctx.target, attempt: ctx.attempt, name: e.name });
          },
          maxAttempts: 2,
          onFailure: (f) => void failures.push(f),
        }),
        'audit.plain': receiver(Published, { handle: () => {} }),
      },
    });
    return { config, got, failures };
  }

  it('writes one delivery row per target, each delivered with its target', async () => {
    const { config, got } = fanOut();
    const outbox = await openOutbox(db, config);
    await outbox.fire('cms.Published', { tenants: ['acme', 'globex', 'initech'] });

    const rows = await rowsOf(outbox, 'hooks.tenant');
    expect(rows.map((r) => [r.target, r.status])).toEqual([
      ['acme', 'pending'],
      ['globex', 'pending'],
      ['initech', 'pending'],
    ]);
    // the plain receiver of the same event still has one row with the blank target
    expect((await rowsOf(outbox, 'audit.plain')).map((r) => r.target)).toEqual(['']);

    expect((await drainOutbox(outbox)).succeeded).toBe(4);
    expect(got.map((g) => g.target).sort()).toEqual(['acme', 'globex', 'initech']);
    expect((await rowsOf(outbox, 'hooks.tenant')).every((r) => r.status === 'succeeded')).toBe(
      true,
    );
  });

  it('gives each target its own attempts, backoff and dead letter', async () => {
    const { config, failures } = fanOut({
      fail: (target) => {
        if (target === 'globex') throw new Error('globex is down');
        if (target === 'initech') throw new PermanentFailure('initech is gone');
      },
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('cms.Published', { tenants: ['acme', 'globex', 'initech'] });
    await drainOutbox(outbox, { respectBackoff: true });

    const rows = await rowsOf(outbox, 'hooks.tenant');
    expect(rows.map((r) => [r.target, r.status, r.attempts])).toEqual([
      ['acme', 'succeeded', 1],
      ['globex', 'failed', 1],
      ['initech', 'dead', 1],
    ]);
    expect(rows[1].availableAt.getTime()).toBeGreaterThan(Date.now());
    // onFailure names the target: the receiver key alone no longer says which one failed
    expect(failures.map((f) => [f.target, f.status]).sort()).toEqual([
      ['globex', 'failed'],
      ['initech', 'dead'],
    ]);
  });

  it("holds a key's later events back per target: a dead target stops only its own, its sibling targets flow", async () => {
    const { config, got } = fanOut({
      fail: (target) => {
        if (target === 'globex') throw new PermanentFailure('globex is gone');
      },
    });
    const outbox = await openOutbox(db, config);
    for (let i = 0; i < 3; i++)
      await outbox.fire('cms.Published', { tenants: ['acme', 'globex'] }, { orderingKey: 'f-1' });
    await drainOutbox(outbox);

    const rows = await rowsOf(outbox, 'hooks.tenant');
    expect(rows.map((r) => [r.target, r.status])).toEqual([
      ['acme', 'succeeded'],
      ['globex', 'dead'],
      ['acme', 'succeeded'],
      ['globex', 'pending'],
      ['acme', 'succeeded'],
      ['globex', 'pending'],
    ]);
    expect(got.map((g) => g.target)).toEqual(['acme', 'acme', 'acme']);
  });

  it('delivers a target returned twice once', async () => {
    const { config, got } = fanOut();
    const outbox = await openOutbox(db, config);
    await outbox.fire('cms.Published', { tenants: ['acme', 'acme', 'globex', 'acme'] });
    expect((await rowsOf(outbox, 'hooks.tenant')).map((r) => r.target)).toEqual(['acme', 'globex']);
    await drainOutbox(outbox);
    expect(got.map((g) => g.target)).toEqual(['acme', 'globex']);
  });

  it('writes no row when targets returns nothing, which is how a wildcard says "not this event"', async () => {
    const seen: string[] = [];
    const config = defineOutbox({
      events: { 'cms.Published': Published, 'cms.Other': Other },
      receivers: {
        'bridge.all': receiver(AnyEvent, {
          targets: (e) => (e.name === 'cms.Other' ? ['bus'] : []),
          deliver: async (e: OutboxEvent, ctx: DeliveryContext) =>
            void seen.push(`${e.name}@${ctx.target}`),
        }),
      },
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('cms.Published', { tenants: ['acme'] });
    await outbox.fire('cms.Other', { n: 1 });
    expect((await rowsOf(outbox, 'bridge.all')).map((r) => r.target)).toEqual(['bus']);
    await drainOutbox(outbox);
    expect(seen).toEqual(['cms.Other@bus']);
  });

  it('hands transports the target in their item context', async () => {
    const batches: string[][] = [];
    const config = defineOutbox({
      events: { 'cms.Published': Published },
      receivers: {
        'push.tenant': receiver(Published, {
          targets: (e) => e.payload.tenants,
          deliver: {
            deliverBatch: async (items) => {
              batches.push(items.map((i) => i.context.target));
              return undefined;
            },
          },
        }),
      },
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('cms.Published', { tenants: ['a', 'b'] });
    await drainOutbox(outbox);
    expect(batches).toEqual([['a', 'b']]);
  });

  it('runs targets inside the caller transaction, reading its uncommitted rows', async () => {
    const table = tableName(db, 'subscribers');
    await sqlOf(db.sequelize).run(`CREATE TABLE ${table} (tenant varchar(64) PRIMARY KEY)`, []);
    const config = defineOutbox({
      events: { 'cms.Published': Published },
      receivers: {
        'hooks.subscribed': receiver(Published, {
          // an async lookup: in JavaScript a function that reads the database is async
          targets: async (_e, ctx) => {
            expect(ctx).toMatchObject({ receiverKey: 'hooks.subscribed', deliveryId: null });
            const rows = await sqlOf(db.sequelize).select<{ tenant: string }>(
              `SELECT tenant FROM ${table} ORDER BY tenant`,
              [],
              ctx.transaction,
            );
            return rows.map((r) => r.tenant);
          },
          handle: () => {},
        }),
      },
    });
    const outbox = await openOutbox(db, config);
    await db.sequelize.transaction(async (t) => {
      await sqlOf(db.sequelize).run(
        `INSERT INTO ${table} (tenant) VALUES ('acme'), ('globex')`,
        [],
        t,
      );
      await outbox.fire('cms.Published', { tenants: [] }, { transaction: t });
    });
    expect((await rowsOf(outbox, 'hooks.subscribed')).map((r) => r.target)).toEqual([
      'acme',
      'globex',
    ]);
  });

  it('fails fire() and rolls the caller change back when targets throws', async () => {
    const table = tableName(db, 'changes');
    await sqlOf(db.sequelize).run(`CREATE TABLE ${table} (id integer PRIMARY KEY)`, []);
    const { config } = fanOut({
      targets: () => {
        throw new Error('tenant directory unavailable');
      },
    });
    const outbox = await openOutbox(db, config);
    await expect(
      db.sequelize.transaction(async (t) => {
        await sqlOf(db.sequelize).run(`INSERT INTO ${table} (id) VALUES (1)`, [], t);
        await outbox.fire('cms.Published', { tenants: ['acme'] }, { transaction: t });
      }),
    ).rejects.toThrow('tenant directory unavailable');
    const rows = await sqlOf(db.sequelize).select(`SELECT id FROM ${table}`, []);
    expect(rows).toEqual([]);
    expect(await eventCount(outbox)).toBe(0);
  });

  it.each([
    ['an empty string', ['acme', '']],
    ['a number', ['acme', 7]],
    ['a string longer than the column', ['x'.repeat(256)]],
    ['a bare string', 'acme'],
    ['null', null],
  ])(
    'refuses a target that is %s, naming the receiver, and writes nothing',
    async (_what, answer) => {
      const { config } = fanOut({ targets: () => answer as Iterable<string> });
      const outbox = await openOutbox(db, config);
      const error = await outbox.fire('cms.Published', { tenants: [] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toMatch(
        /receiver hooks\.tenant's targets for cms\.Published/,
      );
      expect(await eventCount(outbox)).toBe(0);
    },
  );

  it('fails fire() when an async targets function rejects, writing nothing', async () => {
    const { config } = fanOut({
      targets: (() =>
        Promise.reject(new Error('directory timed out'))) as unknown as () => string[],
    });
    const outbox = await openOutbox(db, config);
    await expect(outbox.fire('cms.Published', { tenants: [] })).rejects.toThrow(
      'directory timed out',
    );
    expect(await eventCount(outbox)).toBe(0);
  });

  it('calls targets once per event fired in fireMany, naming the message on a refusal', async () => {
    const calls: string[][] = [];
    const { config } = fanOut({
      targets: (e) => {
        calls.push(e.payload.tenants);
        return e.payload.tenants;
      },
    });
    const outbox = await openOutbox(db, config);
    await outbox.fireMany([
      { name: 'cms.Published', payload: { tenants: ['a'] } },
      { name: 'cms.Published', payload: { tenants: ['b', 'c'] } },
    ]);
    expect(calls).toEqual([['a'], ['b', 'c']]);
    expect((await rowsOf(outbox, 'hooks.tenant')).map((r) => r.target)).toEqual(['a', 'b', 'c']);
    await expect(
      outbox.fireMany([
        { name: 'cms.Published', payload: { tenants: ['a'] } },
        { name: 'cms.Published', payload: { tenants: [''] } },
      ]),
    ).rejects.toThrow(/^fireMany\(\)\[1\]: receiver hooks\.tenant's targets/);
  });

  it('is refused beside inline and onCommit modes at declaration', () => {
    for (const mode of ['inline', 'onCommit'] as const) {
      expect(() =>
        defineOutbox({
          events: { 'cms.Published': Published },
          receivers: {
            'hooks.x': receiver(Published, { mode, targets: () => ['a'], handle: () => {} }),
          },
        }),
      ).toThrow(`receivers["hooks.x"].targets needs a durable receiver (mode is "${mode}")`);
    }
  });
});
