import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineOutbox,
  event,
  PermanentFailure,
  receiver,
  ValidationError,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { openOutbox, rowsOf } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const payload = z.object({ n: z.number() });

/** A receiver that dead-letters every event at once, so each leaves a dead letter. */
function deadConfig() {
  return defineOutbox({
    events: { 'shop.Placed': event({ schema: payload }) },
    receivers: {
      'shop.fail': receiver('shop.Placed', {
        handle: () => {
          throw new PermanentFailure('no');
        },
      }),
      'shop.later': receiver('shop.Placed', { handle: () => {}, due: { hours: 1 } }),
    },
    settings: { tenancy: 'column' },
  });
}

describeEachDialect('tenants: operations narrowed by tenant', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  async function firedFor(tenants: (string | null)[]) {
    const outbox = await openOutbox(db, deadConfig());
    const fired = [];
    for (const [i, tenant] of tenants.entries())
      fired.push(await outbox.fire('shop.Placed', { n: i }, { tenant }));
    await drainOutbox(outbox);
    return { outbox, fired };
  }

  it('dead letters and health read one tenant’s rows only', async () => {
    const { outbox } = await firedFor(['acme', 'globex', 'acme', null]);
    const acme = await outbox.deadLetters({ tenant: 'acme' });
    expect(acme.map((d) => d.tenant)).toEqual(['acme', 'acme']);
    expect((await outbox.deadLetters()).map((d) => d.tenant).sort()).toEqual([
      'acme',
      'acme',
      'globex',
      null,
    ]);
    const health = await outbox.health({ tenant: 'globex' });
    expect([health.dead, health.scheduled]).toEqual([1, 1]);
    const all = await outbox.health();
    expect([all.dead, all.scheduled]).toEqual([4, 4]);
  });

  it('requeueDead({ tenant }) gives back only that tenant’s dead letters', async () => {
    const { outbox } = await firedFor(['acme', 'globex', 'acme']);
    expect(await outbox.requeueDead({ tenant: 'acme', dryRun: true })).toBe(2);
    expect(await outbox.requeueDead({ tenant: 'acme' })).toBe(2);
    const rows = await rowsOf(outbox, 'shop.fail');
    expect(rows.map((r) => r.status)).toEqual(['pending', 'dead', 'pending']);
  });

  it('cancel and replay narrowed by tenant leave another tenant’s events alone, reported missing', async () => {
    const { outbox, fired } = await firedFor(['acme', 'globex']);
    const [acme, globex] = fired;
    const cancel = await outbox.cancelDeliveries([acme, globex], { tenant: 'acme' });
    expect(cancel).toEqual({ cancelled: 1, inFlight: 0, missing: [globex.id] });
    const later = await rowsOf(outbox, 'shop.later');
    expect(later.map((r) => r.status)).toEqual(['cancelled', 'pending']);
    const replay = await outbox.replayEvents([acme, globex], {
      tenant: 'globex',
      receiverKeys: ['shop.fail'],
    });
    expect(replay).toEqual({ reopened: 1, added: 0, missing: [acme.id] });
    const failed = await rowsOf(outbox, 'shop.fail');
    expect(failed.map((r) => r.status)).toEqual(['dead', 'pending']);
  });

  it('an operation narrowed by tenant is refused on an outbox without tenancy, or for a bad name', async () => {
    const { outbox } = await firedFor(['acme']);
    await expect(outbox.deadLetters({ tenant: '' })).rejects.toThrow(
      /deadLetters\(\): tenant must be a string of 1 to 64 characters/,
    );
    const plain = await openOutbox(
      db,
      defineOutbox({ events: { 'shop.Placed': event({ schema: payload }) } }),
    );
    for (const call of [
      () => plain.health({ tenant: 'acme' }),
      () => plain.requeueDead({ tenant: 'acme' }),
      () => plain.cancelDeliveries([], { tenant: 'acme' }),
    ]) {
      await expect(call()).rejects.toThrow(ValidationError);
      await expect(call()).rejects.toThrow(/but this outbox keeps no tenants/);
    }
  });

  it('pruneEvents({ tenant }) deletes only that tenant’s due events', async () => {
    const config = defineOutbox({
      events: { 'shop.Placed': event({ schema: payload }) },
      receivers: { 'shop.ok': receiver('shop.Placed', { handle: () => {} }) },
      settings: { tenancy: 'column' },
    });
    const outbox = await openOutbox(db, config);
    for (const tenant of ['acme', 'globex', 'acme', null])
      await outbox.fire('shop.Placed', { n: 0 }, { tenant });
    await drainOutbox(outbox);
    const later = new Date(Date.now() + 60_000);
    const options = { olderThan: { seconds: 1 }, now: later } as const;
    expect(await outbox.pruneEvents({ ...options, tenant: 'acme', dryRun: true })).toBe(2);
    expect(await outbox.pruneEvents({ ...options, tenant: 'acme' })).toBe(2);
    const left = await runtimeOf(outbox).store.readEvents({});
    expect(left.map((e) => e.tenant)).toEqual(['globex', null]);
  });

  it('a replay’s added row keeps its tenant’s ordering key apart, as fire() writes it', async () => {
    const seen: string[] = [];
    const one = defineOutbox({
      events: { 'shop.Placed': event({ schema: payload }) },
      receivers: { 'shop.ok': receiver('shop.Placed', { handle: () => {} }) },
      settings: { tenancy: 'column' },
    });
    const prefix = `tn${Math.random().toString(36).slice(2, 8)}_`;
    const first = await openOutbox(db, one, { tablePrefix: prefix });
    const acme = await first.fire('shop.Placed', { n: 1 }, { tenant: 'acme', orderingKey: 'k' });
    await first.fire('shop.Placed', { n: 2 }, { orderingKey: 'k' });
    await drainOutbox(first);
    // A receiver added later, which fails for good: its replayed row of acme's "k" must not
    // hold back the later event of the tenantless "k".
    const two = defineOutbox({
      events: { 'shop.Placed': event({ schema: payload }) },
      receivers: {
        'shop.ok': receiver('shop.Placed', { handle: () => {} }),
        'shop.new': receiver('shop.Placed', {
          handle: (e) => {
            if (e.tenant === 'acme') throw new PermanentFailure('no');
            seen.push(`${e.tenant}:${(e.payload as { n: number }).n}`);
          },
        }),
      },
      settings: { tenancy: 'column' },
    });
    const second = await openOutbox(db, two, { tablePrefix: prefix });
    const replayed = await second.replayEvents([acme], { receiverKeys: ['shop.new'] });
    expect(replayed.added).toBe(1);
    await drainOutbox(second);
    const plain = await second.fire('shop.Placed', { n: 3 }, { orderingKey: 'k' });
    expect(plain.tenant).toBeNull();
    await drainOutbox(second);
    expect(seen).toEqual(['null:3']);
  });
});
