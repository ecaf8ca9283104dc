import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AnyEvent,
  ConfigurationError,
  causedBy,
  defineOutbox,
  event,
  getHeaders,
  type OutboxEvent,
  receiver,
  ValidationError,
  withTenant,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { openOutbox, shortSleep } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const payload = z.object({ n: z.number() });

/** An outbox keeping tenants in a column, with one handler recording what it saw. */
function tenantConfig(
  seen: { tenant: unknown; context: unknown; n: number }[],
  fail?: Set<number>,
) {
  return defineOutbox({
    events: { 'shop.Placed': event({ schema: payload }), 'shop.Noted': event({ schema: payload }) },
    receivers: {
      'shop.log': receiver('shop.Placed', {
        handle: (e, context) => {
          const n = (e.payload as { n: number }).n;
          if (fail?.has(n)) throw new Error(`refused ${n}`);
          seen.push({ tenant: e.tenant, context: context.tenant, n });
        },
        maxAttempts: 3,
      }),
    },
    settings: { tenancy: 'column' },
  });
}

describeEachDialect('tenants: a tenant column', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('fire({ tenant }) records the tenant; the delivered event and context.tenant name it', async () => {
    const seen: { tenant: unknown; context: unknown; n: number }[] = [];
    const outbox = await openOutbox(db, tenantConfig(seen));
    const fired = await outbox.fire('shop.Placed', { n: 1 }, { tenant: 'acme' });
    await outbox.fire('shop.Placed', { n: 2 });
    expect(fired.tenant).toBe('acme');
    await drainOutbox(outbox);
    expect(seen).toEqual([
      { tenant: 'acme', context: 'acme', n: 1 },
      { tenant: null, context: null, n: 2 },
    ]);
    const stored = await runtimeOf(outbox).store.readEvents({});
    expect(stored.map((e) => e.tenant)).toEqual(['acme', null]);
  });

  it('an event fired inside withTenant() belongs to the block’s tenant; a call’s own tenant wins', async () => {
    const seen: { tenant: unknown; context: unknown; n: number }[] = [];
    const outbox = await openOutbox(db, tenantConfig(seen));
    await withTenant('acme', async () => {
      await outbox.fire('shop.Placed', { n: 1 });
      await outbox.fire('shop.Placed', { n: 2 }, { tenant: 'globex' });
      await outbox.fire('shop.Placed', { n: 3 }, { tenant: null });
      await withTenant(null, () => outbox.fire('shop.Placed', { n: 4 }));
    });
    const stored = await runtimeOf(outbox).store.readEvents({});
    expect(stored.map((e) => e.tenant)).toEqual(['acme', 'globex', null, null]);
  });

  it('an event a receiver fires belongs to the tenant of the event it handles', async () => {
    const config = defineOutbox({
      events: {
        'shop.Placed': event({ schema: payload }),
        'shop.Noted': event({ schema: payload }),
      },
      receivers: {
        'shop.note': receiver('shop.Placed', {
          handle: async (e, context) => {
            const n = (e.payload as { n: number }).n;
            await outbox.fire('shop.Noted', { n }, { transaction: context.transaction });
          },
        }),
      },
      settings: { tenancy: 'column' },
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('shop.Placed', { n: 1 }, { tenant: 'acme' });
    await outbox.fire('shop.Placed', { n: 2 });
    await drainOutbox(outbox);
    const noted = (await runtimeOf(outbox).store.readEvents({ name: 'shop.Noted' })).map((e) => [
      e.tenant,
      e.causedBy !== null,
    ]);
    expect(noted).toEqual([
      ['acme', true],
      [null, true],
    ]);
    // causedBy() with a parent naming its tenant does the same for code of the app's own.
    const parent = { sequence: '1', correlationId: null, tenant: 'globex' };
    const child = await causedBy(parent, () => outbox.fire('shop.Noted', { n: 3 }));
    expect(child.tenant).toBe('globex');
  });

  it('idempotency keys are unique per tenant: the same key of two tenants is two events, a repeat within one is the stored event', async () => {
    const seen: { tenant: unknown; context: unknown; n: number }[] = [];
    const outbox = await openOutbox(db, tenantConfig(seen));
    const a = await outbox.fire('shop.Placed', { n: 1 }, { tenant: 'acme', idempotencyKey: 'k' });
    const b = await outbox.fire('shop.Placed', { n: 2 }, { tenant: 'globex', idempotencyKey: 'k' });
    const none = await outbox.fire('shop.Placed', { n: 3 }, { idempotencyKey: 'k' });
    const again = await outbox.fire(
      'shop.Placed',
      { n: 4 },
      { tenant: 'acme', idempotencyKey: 'k' },
    );
    expect([a.duplicate, b.duplicate, none.duplicate, again.duplicate]).toEqual([
      false,
      false,
      false,
      true,
    ]);
    expect(again.sequence).toBe(a.sequence);
    expect(again.payload).toEqual({ n: 1 });
    expect(again.idempotencyKey).toBe('k');
    expect(again.tenant).toBe('acme');
    const many = await outbox.fireMany([
      { name: 'shop.Placed', payload: { n: 5 }, tenant: 'globex', idempotencyKey: 'k' },
      { name: 'shop.Placed', payload: { n: 6 }, tenant: 'initech', idempotencyKey: 'k' },
    ]);
    expect(many.map((e) => [e.duplicate, e.sequence === b.sequence])).toEqual([
      [true, true],
      [false, false],
    ]);
    const stored = await runtimeOf(outbox).store.readEvents({});
    expect(stored.map((e) => [e.tenant, e.idempotencyKey])).toEqual([
      ['acme', 'k'],
      ['globex', 'k'],
      [null, 'k'],
      ['initech', 'k'],
    ]);
  });

  it('ordering keys are per tenant: a failed delivery holds back only its own tenant’s key', async () => {
    const seen: { tenant: unknown; context: unknown; n: number }[] = [];
    const outbox = await openOutbox(db, tenantConfig(seen, new Set([1])));
    await outbox.fire('shop.Placed', { n: 1 }, { tenant: 'acme', orderingKey: 'order-7' });
    await outbox.fire('shop.Placed', { n: 2 }, { tenant: 'acme', orderingKey: 'order-7' });
    await outbox.fire('shop.Placed', { n: 3 }, { tenant: 'globex', orderingKey: 'order-7' });
    await outbox.runRelay({ untilIdle: true, sleep: shortSleep() });
    // acme's first failed (backing off), so acme's second waits; globex's same key went.
    expect(seen.map((s) => s.n)).toEqual([3]);
    const events = await runtimeOf(outbox).store.readEvents({});
    expect(events.map((e) => e.orderingKey)).toEqual(['order-7', 'order-7', 'order-7']);
  });

  it('refuses a bad tenant, and a key too long for its tenant, naming them; nothing is written', async () => {
    const outbox = await openOutbox(db, tenantConfig([]));
    await expect(outbox.fire('shop.Placed', { n: 1 }, { tenant: '' })).rejects.toThrow(
      /fire\(\): shop\.Placed tenant must be a string of 1 to 64 characters \(got ""\)/,
    );
    await expect(outbox.fire('shop.Placed', { n: 1 }, { tenant: 'a\u001fb' })).rejects.toThrow(
      /must not contain control characters/,
    );
    await expect(
      outbox.fire('shop.Placed', { n: 1 }, { tenant: 'acme', idempotencyKey: 'k'.repeat(251) }),
    ).rejects.toThrow(
      /idempotencyKey must be a string of 1 to 250 characters \(255 less the tenant "acme"/,
    );
    expect(() => withTenant('', () => 0)).toThrow(ValidationError);
    expect(await runtimeOf(outbox).store.readEvents({})).toEqual([]);
  });

  it('with tenancy off, a tenant is refused — named, or from a withTenant() block — and nothing is written', async () => {
    const config = defineOutbox({ events: { 'shop.Placed': event({ schema: payload }) } });
    const outbox = await openOutbox(db, config);
    await expect(outbox.fire('shop.Placed', { n: 1 }, { tenant: 'acme' })).rejects.toThrow(
      /fire\(\): shop\.Placed names the tenant "acme", but this outbox keeps no tenants; declare defineOutbox\(\{ settings: \{ tenancy: 'column' \} \}\)/,
    );
    await expect(withTenant('acme', () => outbox.fire('shop.Placed', { n: 1 }))).rejects.toThrow(
      /\(from the withTenant\(\) block around the call\)/,
    );
    const plain = await outbox.fire('shop.Placed', { n: 2 }, { tenant: null });
    expect(plain.tenant).toBeNull();
    const stored = await runtimeOf(outbox).store.readEvents({});
    expect(stored.map((e) => (e as OutboxEvent | typeof e).tenant)).toEqual([null]);
  });

  it('relays of different tenants share one table: each claims and delivers only its tenants’ events', async () => {
    const seen: { tenant: unknown; context: unknown; n: number }[] = [];
    const outbox = await openOutbox(db, tenantConfig(seen));
    await outbox.fire('shop.Placed', { n: 1 }, { tenant: 'acme' });
    await outbox.fire('shop.Placed', { n: 2 }, { tenant: 'globex' });
    await outbox.fire('shop.Placed', { n: 3 });
    await outbox.fire('shop.Placed', { n: 4 }, { tenant: 'acme' });
    const acme = await outbox.runRelay({ tenants: ['acme'], untilIdle: true, sleep: shortSleep() });
    expect(acme.succeeded).toBe(2);
    // No ordering key: any order, so the two are put in order before the later appends.
    seen.sort((a, b) => a.n - b.n);
    expect(seen.map((x) => x.n)).toEqual([1, 4]);
    const none = await outbox.runRelay({ tenants: [], untilIdle: true, sleep: shortSleep() });
    expect(none.succeeded).toBe(0);
    const rest = await outbox.runRelay({
      excludeTenants: ['globex'],
      untilIdle: true,
      sleep: shortSleep(),
    });
    // An event without a tenant is served by a relay that only leaves tenants out.
    expect(rest.succeeded).toBe(1);
    expect(seen.map((x) => x.n)).toEqual([1, 4, 3]);
    const all = await outbox.deliverPending({ tenants: ['globex'] });
    expect(all.succeeded).toBe(1);
    expect(seen.map((x) => x.n)).toEqual([1, 4, 3, 2]);
  });

  it('a relay narrowed by tenant is refused, naming the option, without tenancy or with a bad name', async () => {
    const outbox = await openOutbox(db, tenantConfig([]));
    await expect(outbox.runRelay({ tenants: [''], passes: 1 })).rejects.toThrow(
      /runRelay\(\{ tenants \}\): a tenant must be a string of 1 to 64 characters/,
    );
    const plain = await openOutbox(
      db,
      defineOutbox({ events: { 'shop.Placed': event({ schema: payload }) } }),
    );
    const refusal = plain.runRelay({ excludeTenants: ['acme'], passes: 1 });
    await expect(refusal).rejects.toThrow(ConfigurationError);
    await expect(refusal).rejects.toThrow(
      /runRelay\(\{ excludeTenants \}\) narrows by tenant, but this outbox keeps no tenants/,
    );
  });

  it('a transport’s context names the tenant, and its message headers carry outbox-tenant', async () => {
    const sent: { context: unknown; headers: Record<string, string> }[] = [];
    const config = defineOutbox({
      events: { 'shop.Placed': event({ schema: payload }) },
      receivers: {
        bridge: receiver(AnyEvent, {
          deliver: {
            name: 'memory',
            deliver: async (e, context) =>
              void sent.push({ context: context.tenant, headers: getHeaders(e) }),
          },
        }),
      },
      settings: { tenancy: 'column' },
    });
    const outbox = await openOutbox(db, config);
    await outbox.fire('shop.Placed', { n: 1 }, { tenant: 'acme' });
    await outbox.fire('shop.Placed', { n: 2 });
    await drainOutbox(outbox);
    expect(sent.map((x) => [x.context, x.headers['outbox-tenant']])).toEqual([
      ['acme', 'acme'],
      [null, undefined],
    ]);
  });
});
