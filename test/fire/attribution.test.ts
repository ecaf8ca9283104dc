import { DataTypes } from 'sequelize';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  attributed,
  causedBy,
  currentScope,
  defineOutbox,
  event,
  type FireOptions,
  type OutboxEvent,
  propagateScope,
  receiver,
  type Scope,
  ValidationError,
} from '../../src/index.js';
import { frames } from '../../src/scope/frame.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { freshPrefix, openOutbox, tableName } from '../relay/support.js';
import { describeEachDialect, sqlOf } from '../support/dialects.js';

const Placed = event({ schema: z.object({ orderId: z.string() }) });
const Invoiced = event({ schema: z.object({ orderId: z.string() }) });
const Shipped = event({ schema: z.object({ orderId: z.string() }) });
const Audited = event({ schema: z.object({ orderId: z.string() }) });
const Noted = event({ schema: z.object({ orderId: z.string() }) });

/** How a receiver fires, set once the outbox exists (the config cannot name it). */
type Fire = (name: string, payload: unknown, options?: FireOptions) => Promise<unknown>;

/**
 * A shop whose reactions fire more events: a durable handler of `Placed` fires `Invoiced`,
 * a durable handler of `Invoiced` fires `Shipped` (a grandchild, fired a drain later), an
 * inline receiver of `Placed` fires `Audited` in the transaction, an onCommit receiver
 * fires `Noted` after it. Every receiver records the event it was handed.
 */
function shop(fire: () => Fire, seen: OutboxEvent[]) {
  return defineOutbox({
    events: {
      'shop.Placed': Placed,
      'shop.Invoiced': Invoiced,
      'shop.Shipped': Shipped,
      'shop.Audited': Audited,
      'shop.Noted': Noted,
    },
    receivers: {
      'billing.invoice': receiver(Placed, {
        handle: async (e, ctx): Promise<void> => {
          seen.push(e);
          await fire()('shop.Invoiced', e.payload, { transaction: ctx.transaction });
        },
      }),
      'shipping.ship': receiver(Invoiced, {
        handle: async (e, ctx): Promise<void> => {
          seen.push(e);
          await fire()('shop.Shipped', e.payload, { transaction: ctx.transaction });
        },
      }),
      'audit.inline': receiver(Placed, {
        mode: 'inline',
        handle: async (e, ctx): Promise<void> => {
          await fire()('shop.Audited', e.payload, { transaction: ctx.transaction });
        },
      }),
      'notes.onCommit': receiver(Placed, {
        mode: 'onCommit',
        handle: async (e): Promise<void> => {
          await fire()('shop.Noted', e.payload);
        },
      }),
    },
  });
}

/** An event row's attribution columns, as stored. */
interface AttributionRow {
  id: string;
  uuid: string;
  name: string;
  actor: string | null;
  correlation_id: string | null;
  caused_by: string | null;
  headers: Record<string, unknown>;
}

describeEachDialect('attribution: scopes on AsyncLocalStorage, recorded by fire()', (dialect) => {
  let db: TestDatabase;
  let prefix: string;
  let outbox: Awaited<ReturnType<typeof openShop>>;
  const seen: OutboxEvent[] = [];

  async function openShop() {
    prefix = freshPrefix();
    let fire: Fire | undefined;
    const opened = await openOutbox(
      db,
      shop(() => fire!, seen),
      { tablePrefix: prefix },
    );
    fire = (name, payload, options) => opened.fire(name as never, payload as never, options);
    return opened;
  }

  beforeAll(async () => {
    db = await dialect.open();
    outbox = await openShop();
  });
  afterAll(async () => {
    await outbox.close();
    await db.cleanup();
  });

  /** Every event row, in sequence order, with its attribution columns. */
  async function rows(): Promise<AttributionRow[]> {
    const found = await sqlOf(db.sequelize).select(
      `SELECT id, uuid, name, actor, correlation_id, caused_by, headers FROM ${tableName(db, `${prefix}events`)} ORDER BY id`,
      [],
    );
    return found.map((r) => ({
      id: String(r.id),
      uuid: String(r.uuid),
      name: r.name as string,
      actor: (r.actor as string | null) ?? null,
      correlation_id: (r.correlation_id as string | null) ?? null,
      caused_by: r.caused_by === null ? null : String(r.caused_by),
      headers: typeof r.headers === 'string' ? JSON.parse(r.headers) : (r.headers as object),
    }));
  }

  /** The row of one fired event. */
  async function rowOf(sequence: string): Promise<AttributionRow> {
    const row = (await rows()).find((r) => r.id === sequence);
    if (!row) throw new Error(`no event ${sequence}`);
    return row;
  }

  /** Fire a plain `shop.Shipped` (no receivers) and return its row. */
  async function fireOne(options?: FireOptions): Promise<AttributionRow> {
    const fired = await outbox.fire('shop.Shipped', { orderId: 'x' }, options);
    return rowOf(fired.sequence);
  }

  it('nested scopes layer: an inner block overrides what it sets and inherits the rest', async () => {
    const seenScopes: Scope[] = [];
    const row = await attributed(
      { actor: 'user:1', correlationId: 'req-1', source: 'web', tenant: 'acme' },
      () =>
        attributed({ source: 'import' }, async (inner) => {
          seenScopes.push(inner, currentScope());
          return fireOne();
        }),
    );
    expect(seenScopes[0]).toBe(seenScopes[1]);
    expect(seenScopes[0]).toMatchObject({
      actor: 'user:1',
      actorKey: 'user:1',
      correlationId: 'req-1',
      causedBy: null,
      data: { source: 'import', tenant: 'acme' },
    });
    expect(row).toMatchObject({ actor: 'user:1', correlation_id: 'req-1', caused_by: null });
    expect(row.headers).toEqual({ 'outbox-scope-source': 'import', 'outbox-scope-tenant': 'acme' });
  });

  it('the actor is replaced whole: naming any part of it replaces all of it', async () => {
    const user = { id: 7, name: 'Ada' };
    const [scope, row] = await attributed({ actor: user, correlationId: 'req-2' }, () =>
      attributed({ actorKey: 'system:cron' }, async (s) => [s, await fireOne()] as const),
    );
    expect(scope.actor).toBeUndefined();
    expect(scope.actorKey).toBe('system:cron');
    expect(scope.correlationId).toBe('req-2');
    expect(row.actor).toBe('system:cron');

    // And the other way round: an inner actor drops the outer block's explicit key.
    const inner = attributed({ actor: user, actorKey: 'User:7' }, () =>
      attributed({ actor: 'svc:billing' }, () => currentScope()),
    );
    expect(inner).toMatchObject({ actor: 'svc:billing', actorKey: 'svc:billing' });
    // null clears the actor for the block.
    expect(
      attributed({ actor: 'a' }, () => attributed({ actor: null }, () => currentScope())),
    ).toMatchObject({ actor: undefined, actorKey: null });
  });

  it('a fresh empty scope when none is set, frozen, never a shared one', async () => {
    const a = currentScope();
    const b = currentScope();
    expect(a).not.toBe(b);
    expect(a).toEqual({
      actor: undefined,
      actorKey: null,
      correlationId: null,
      causedBy: null,
      data: {},
      tenant: null,
    });
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.isFrozen(a.data)).toBe(true);
    // And the block's scope is gone once it returns.
    await attributed({ actor: 'user:3' }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      expect(currentScope().actorKey).toBe('user:3');
    });
    expect(currentScope().actorKey).toBeNull();
  });

  it('a scope cannot be edited from inside', async () => {
    await attributed({ actor: 'user:4', correlationId: 'req-4', tags: ['a', 'b'] }, async (s) => {
      expect(() => {
        (s as { actorKey: string }).actorKey = 'user:evil';
      }).toThrow(TypeError);
      expect(() => {
        (s.data as Record<string, unknown>).extra = 1;
      }).toThrow(TypeError);
      expect(() => {
        (s.data.tags as string[]).push('c');
      }).toThrow(TypeError);
      const row = await fireOne();
      expect(row).toMatchObject({ actor: 'user:4', correlation_id: 'req-4' });
      expect(row.headers).toEqual({ 'outbox-scope-tags': ['a', 'b'] });
    });
  });

  it("the scope's data is a copy taken when the block is entered", async () => {
    const tags = ['a'];
    await attributed({ tags }, async () => {
      tags.push('b');
      expect((await fireOne()).headers).toEqual({ 'outbox-scope-tags': ['a'] });
    });
  });

  it('data lands in the headers under outbox-scope-, and a header fire() names wins', async () => {
    const row = await attributed({ source: 'import', batch: 12 }, () =>
      fireOne({ headers: { 'outbox-scope-source': 'explicit', 'x-other': true } }),
    );
    expect(row.headers).toEqual({
      'outbox-scope-source': 'explicit',
      'outbox-scope-batch': 12,
      'x-other': true,
    });
  });

  it('the actor key is derived once: a string as is, a model instance as ModelName:pk, an object with an id as String(id)', async () => {
    const User = db.sequelize.define(
      'User',
      { id: { type: DataTypes.INTEGER, primaryKey: true }, name: DataTypes.STRING },
      { tableName: `${prefix}users`, timestamps: false },
    );
    const user = User.build({ id: 42, name: 'Ada' });
    expect(attributed({ actor: user }, (s) => s.actorKey)).toBe('User:42');
    expect(attributed({ actor: user }, (s) => s.actor)).toBe(user);
    expect(attributed({ actor: { id: 9n } }, (s) => s.actorKey)).toBe('9');
    expect(attributed({ actor: 'svc:mailer' }, (s) => s.actorKey)).toBe('svc:mailer');
    // An explicit key wins, and the actor is then not read at all.
    expect(attributed({ actor: new Map(), actorKey: 'k' }, (s) => s.actorKey)).toBe('k');
    const row = await attributed({ actor: user }, () => fireOne());
    expect(row.actor).toBe('User:42');
  });

  it('an actor no key can be derived from is refused before the block runs', () => {
    const run = vi.fn();
    expect(() => attributed({ actor: new Map() }, run)).toThrowErrorMatchingInlineSnapshot(
      `[ValidationError: attributed(): cannot derive an actor key from actor, an object without an id (Map); pass actorKey as well, e.g. attributed({ actor, actorKey: 'service:billing' }, fn)]`,
    );
    const User = db.sequelize.define(
      'Member',
      { id: { type: DataTypes.INTEGER, primaryKey: true } },
      { tableName: `${prefix}members`, timestamps: false },
    );
    expect(() => attributed({ actor: User.build({}) }, run)).toThrow(
      /actor is a Member without a primary key \(is it saved\?\)/,
    );
    expect(() => attributed({ correlationId: 'x'.repeat(256) }, run)).toThrow(ValidationError);
    expect(() => attributed({ score: Number.NaN }, run)).toThrow(ValidationError);
    expect(() => attributed({ causedBy: '1' }, run)).toThrow(/mark descent with causedBy/);
    expect(run).not.toHaveBeenCalled();
  });

  it('an event fired outside any block records no actor, no parent, and starts a chain of its own', async () => {
    const fired = await outbox.fire('shop.Shipped', { orderId: 'lone' });
    const row = await rowOf(fired.sequence);
    expect(row).toMatchObject({ actor: null, caused_by: null, correlation_id: fired.id });
    expect(fired).toMatchObject({ actor: null, causedBy: null, correlationId: fired.id });
  });

  it('an event fired inside a durable handler records its parent and the chain’s correlation id', async () => {
    seen.length = 0;
    const parent = await attributed({ actor: 'user:5', correlationId: 'req-5' }, () =>
      outbox.fire('shop.Placed', { orderId: 'o5' }),
    );
    expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 2 }); // invoice, then ship
    const all = await rows();
    const invoiced = all.find((r) => r.name === 'shop.Invoiced' && r.caused_by === parent.sequence);
    expect(invoiced).toMatchObject({
      caused_by: parent.sequence,
      correlation_id: 'req-5',
      // The relay runs as nobody: only causation and correlation come off the parent's row.
      actor: null,
    });
    // The handler was handed the parent's attribution, read off its row by the claim.
    expect(seen.find((e) => e.id === parent.id)).toMatchObject({
      actor: 'user:5',
      correlationId: 'req-5',
      causedBy: null,
    });
  });

  it('a grandchild fired later keeps the request’s correlation id', async () => {
    seen.length = 0;
    const root = await attributed({ correlationId: 'req-6' }, () =>
      outbox.fire('shop.Placed', { orderId: 'o6' }),
    );
    await drainOutbox(outbox, { limit: 1 }); // only the invoice
    const child = (await rows()).find(
      (r) => r.name === 'shop.Invoiced' && r.caused_by === root.sequence,
    );
    expect(child).toBeDefined();
    await drainOutbox(outbox); // later, in another pass: the shipping handler
    const grandchild = (await rows()).find(
      (r) => r.name === 'shop.Shipped' && r.caused_by === child!.id,
    );
    expect(grandchild).toMatchObject({ caused_by: child!.id, correlation_id: 'req-6' });
  });

  it('a chain begun without a correlation id is named by the UUID of the event that began it', async () => {
    const root = await outbox.fire('shop.Placed', { orderId: 'o7' });
    await drainOutbox(outbox);
    const chain = await vi.waitFor(async () => {
      const names = (await rows()).filter((r) => r.correlation_id === root.id).map((r) => r.name);
      if (!names.includes('shop.Noted')) throw new Error('the onCommit receiver has not fired yet');
      return names;
    });
    expect(chain.sort()).toEqual(
      ['shop.Audited', 'shop.Invoiced', 'shop.Noted', 'shop.Placed', 'shop.Shipped'].sort(),
    );
  });

  it('an event fired inside an inline receiver records its parent and the chain’s correlation id', async () => {
    const parent = await attributed({ actor: 'user:8', correlationId: 'req-8' }, () =>
      db.sequelize.transaction((transaction) =>
        outbox.fire('shop.Placed', { orderId: 'o8' }, { transaction }),
      ),
    );
    const audited = (await rows()).find(
      (r) => r.name === 'shop.Audited' && r.caused_by === parent.sequence,
    );
    // Inline runs inside the request's block: the actor is the request's too.
    expect(audited).toMatchObject({ correlation_id: 'req-8', actor: 'user:8' });
  });

  it('an event fired inside an onCommit receiver records its parent and the chain’s correlation id', async () => {
    const parent = await attributed({ correlationId: 'req-9' }, () =>
      outbox.fire('shop.Placed', { orderId: 'o9' }),
    );
    const noted = await vi.waitFor(async () => {
      const found = (await rows()).find(
        (r) => r.name === 'shop.Noted' && r.caused_by === parent.sequence,
      );
      if (!found) throw new Error('not yet');
      return found;
    });
    expect(noted.correlation_id).toBe('req-9');
  });

  it('causedBy marks events fired inside as descended from a parent named by its row', async () => {
    const row = await causedBy({ sequence: '12345', correlationId: 'req-10' }, () => fireOne());
    expect(row).toMatchObject({ caused_by: '12345', correlation_id: 'req-10' });
    // The chain id comes off the parent, never from the block around it.
    const inner = await attributed({ correlationId: 'outer' }, () =>
      causedBy({ sequence: '7', correlationId: null, id: 'parent-uuid' }, () => currentScope()),
    );
    expect(inner).toMatchObject({ causedBy: '7', correlationId: 'parent-uuid' });
    expect(() => causedBy({ sequence: 'seven', correlationId: null }, () => 1)).toThrow(
      ValidationError,
    );
  });

  it('propagateScope carries the scope into a queue started outside the block, and is reusable', async () => {
    // A worker loop started outside any block runs every job in its own (empty) context.
    const jobs: (() => Promise<unknown>)[] = [];
    const done: Promise<unknown>[] = [];
    const worker = setInterval(() => {
      for (const job of jobs.splice(0)) done.push(job());
    }, 1);
    try {
      const lost = () => fireOne();
      await attributed({ actor: 'user:12', correlationId: 'req-12' }, async () => {
        const carried = propagateScope(() => fireOne());
        jobs.push(lost, carried, carried);
      });
      await vi.waitFor(() => expect(done).toHaveLength(3));
      const [plain, first, second] = (await Promise.all(done)) as AttributionRow[];
      expect(plain.actor).toBeNull();
      expect([first, second]).toMatchObject([
        { actor: 'user:12', correlation_id: 'req-12' },
        { actor: 'user:12', correlation_id: 'req-12' },
      ]);
    } finally {
      clearInterval(worker);
    }
    // Made outside every block, the wrapper carries nothing, even called inside one.
    const bare = propagateScope(() => currentScope().actorKey);
    expect(attributed({ actor: 'user:13' }, () => bare())).toBeNull();
  });

  it('attribution reads the scope once per fire() call, not per event', async () => {
    await attributed({ actor: 'user:11' }, async () => {
      const spy = vi.spyOn(frames, 'getStore');
      try {
        const fired = await outbox.fireMany(
          Array.from({ length: 20 }, (_, i) => ({
            name: 'shop.Shipped' as const,
            payload: { orderId: `m${i}` },
          })),
        );
        expect(fired.every((e) => e.actor === 'user:11')).toBe(true);
        expect(spy).toHaveBeenCalledTimes(1);
      } finally {
        spy.mockRestore();
      }
    });
  });
});
