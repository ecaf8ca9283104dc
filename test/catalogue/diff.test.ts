import { describe, expect, it } from 'vitest';
import { type CatalogueChange, diffCatalogues } from '../../catalogue/diff.js';
import { buildCatalogue, type Catalogue } from '../../src/introspect/index.js';
import { shopConfig, timingConfig } from './support.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] extends object ? Mutable<T[K]> : T[K] };

const base = (): Mutable<Catalogue> => structuredClone(buildCatalogue(shopConfig())) as never;
const placed = (c: Mutable<Catalogue>) => c.events.find((e) => e.name === 'shop.OrderPlaced')!;
const summary = (changes: readonly CatalogueChange[]) =>
  changes.map((c) => `${c.kind}: ${c.message}`);

function changed(edit: (c: Mutable<Catalogue>) => void) {
  const after = base();
  edit(after);
  return diffCatalogues(base(), after);
}

describe('catalogue diff classifies each change', () => {
  it('an identical catalogue has no changes', () => {
    expect(diffCatalogues(base(), base())).toEqual({ breaking: [], compatible: [] });
  });

  it('a removed event is breaking; a renamed one is called out as a likely rename', () => {
    const diff = changed((c) => {
      placed(c).name = 'shop.OrderSubmitted';
    });
    expect(summary(diff.breaking)).toEqual([
      'event-removed: event shop.OrderPlaced removed — renamed to shop.OrderSubmitted? Rows and consumers still use the old name',
    ]);
    expect(summary(diff.compatible)).toEqual(['event-added: event shop.OrderSubmitted added (v1)']);
  });

  it('a removed field is breaking, and its nested fields are not repeated', () => {
    const diff = changed((c) => {
      const e = placed(c);
      e.fields = e.fields.filter((f) => !f.name.startsWith('items'));
    });
    expect(summary(diff.breaking)).toEqual([
      'field-removed: shop.OrderPlaced: field items removed',
    ]);
  });

  it("a field's type change and optional → required are breaking; required → optional is not", () => {
    const diff = changed((c) => {
      const fields = placed(c).fields;
      fields.find((f) => f.name === 'orderId')!.type = 'integer';
      fields.find((f) => f.name === 'coupon')!.required = true;
      fields.find((f) => f.name === 'items')!.required = false;
    });
    expect(summary(diff.breaking)).toEqual([
      'field-now-required: shop.OrderPlaced: field coupon is now required',
      'field-type-changed: shop.OrderPlaced: field orderId type changed from string to integer',
    ]);
    expect(summary(diff.compatible)).toEqual([
      'field-now-optional: shop.OrderPlaced: field items is now optional',
    ]);
  });

  it('a required field added without a version bump is breaking; with one, or optional, it is not', () => {
    const field = { name: 'currency', type: 'string', required: true, description: null };
    const unbumped = changed((c) => {
      placed(c).fields.push(field);
    });
    expect(summary(unbumped.breaking)).toEqual([
      'field-added: shop.OrderPlaced: required field currency added without a version bump (rows already recorded lack it)',
    ]);
    const bumped = changed((c) => {
      placed(c).fields.push(field);
      placed(c).version = 2;
    });
    expect(bumped.breaking).toEqual([]);
    expect(summary(bumped.compatible)).toEqual([
      'event-version-changed: event shop.OrderPlaced version 1 → 2',
      'field-added: shop.OrderPlaced: required field currency added with version 2',
    ]);
    const optional = changed((c) => {
      placed(c).fields.push({ ...field, required: false });
    });
    expect(optional.breaking).toEqual([]);
  });

  it("a removed receiver, a receiver's mode changed, and a moved receiver are breaking", () => {
    const diff = changed((c) => {
      const e = placed(c);
      e.receivers = e.receivers.filter((r) => r.key !== 'stock.reserve');
      e.receivers[0].mode = 'onCommit';
      c.wildcardReceivers[0].event = 'shop.OrderPlaced';
    });
    // Wildcards sort first (their event is "*"), then by event and receiver key.
    expect(summary(diff.breaking)).toEqual([
      'receiver-moved: receiver aa.audit now listens to shop.OrderPlaced instead of every event (AnyEvent)',
      'receiver-mode-changed: receiver mail.confirm mode changed from durable to onCommit',
      'receiver-removed: receiver stock.reserve removed',
    ]);
  });

  it('tuning a receiver, adding one, or moving its handler to another line is compatible or nothing', () => {
    const diff = changed((c) => {
      const r = placed(c).receivers[0];
      r.maxAttempts = 9;
      r.backoff.capSeconds = 60;
      r.location = 'src/mail.ts:12';
      placed(c).receivers.push({ ...r, key: 'mail.receipt', location: null });
    });
    expect(diff.breaking).toEqual([]);
    expect(summary(diff.compatible)).toEqual([
      'receiver-changed: receiver mail.confirm: maxAttempts 3 → 9, backoff default..default → default..60',
      'receiver-added: receiver mail.receipt added (durable)',
    ]);
  });
});

describe('catalogue diff of lanes, timing and fan-out', () => {
  const timing = (): Mutable<Catalogue> => structuredClone(buildCatalogue(timingConfig())) as never;
  const offers = (c: Mutable<Catalogue>) => c.events.find((e) => e.name === 'offers.OfferMade')!;
  const find = (c: Mutable<Catalogue>, key: string) =>
    [...offers(c).receivers, ...c.wildcardReceivers].find((r) => r.key === key)!;
  function edited(edit: (c: Mutable<Catalogue>) => void) {
    const after = timing();
    edit(after);
    return diffCatalogues(timing(), after);
  }

  it('a lane change is operational, not breaking, and says which relays claim the rows now', () => {
    const diff = edited((c) => {
      find(c, 'offers.notify').lane = 'mail';
      find(c, 'offers.expire').lane = 'default';
    });
    expect(diff.breaking).toEqual([]);
    expect(summary(diff.compatible)).toEqual([
      'receiver-lane-changed: receiver offers.expire lane changed from slow to default (the relays started without --lane claim its rows now)',
      'receiver-lane-changed: receiver offers.notify lane changed from default to mail (its owed rows move with it: run a relay with --lane mail, or they wait)',
    ]);
  });

  it('gaining or losing targets is breaking: it changes what a delivery is', () => {
    const diff = edited((c) => {
      find(c, 'offers.notify').targets = 'src/tenants.ts:4';
      find(c, 'offers.fanOut').targets = null;
    });
    expect(diff.compatible).toEqual([]);
    expect(summary(diff.breaking)).toEqual([
      'receiver-targets-changed: receiver offers.fanOut is no longer a fan-out (targets removed): one delivery per event instead of one per target; rows already written per target are each still delivered',
      'receiver-targets-changed: receiver offers.notify is now a fan-out (targets src/tenants.ts:4): one delivery per target instead of one per event; rows already owed have no target',
    ]);
  });

  it('a targets or due function moving to another line is no change', () => {
    const diff = edited((c) => {
      find(c, 'offers.fanOut').targets = 'src/tenants.ts:40';
      find(c, 'offers.expire').dueCallable = 'src/expiry.ts:7';
    });
    expect(diff).toEqual({ breaking: [], compatible: [] });
  });

  it('a due delay changed, a due function gained or lost, are compatible and reported', () => {
    const diff = edited((c) => {
      find(c, 'offers.remind').dueSeconds = 72 * 3600;
      find(c, 'offers.notify').dueCallable = 'src/expiry.ts:7';
      find(c, 'offers.expire').dueCallable = null;
      find(c, 'offers.fanOut').dueSeconds = 60;
      find(c, 'offers.fanOut').targets = 'function tenantsOf';
    });
    expect(diff.breaking).toEqual([]);
    expect(summary(diff.compatible)).toEqual([
      'receiver-due-changed: receiver offers.expire is no longer scheduled (was due when its due function says (function expiryOf)): it runs on record',
      'receiver-due-changed: receiver offers.fanOut is now scheduled: due 1m after the event occurred (it ran on record)',
      'receiver-due-changed: receiver offers.notify is now scheduled: due when its due function says (src/expiry.ts:7) (it ran on record)',
      'receiver-due-changed: receiver offers.remind due changed from 2d after the event occurred to 3d after the event occurred (rows already written keep their due time)',
    ]);
  });

  it('a due delay traded for a due function is reported as a due change', () => {
    const diff = edited((c) => {
      find(c, 'offers.remind').dueSeconds = null;
      find(c, 'offers.remind').dueCallable = 'src/expiry.ts:7';
    });
    expect(summary(diff.compatible)).toEqual([
      'receiver-due-changed: receiver offers.remind due changed from 2d after the event occurred to when its due function says (src/expiry.ts:7) (rows already written keep their due time)',
    ]);
  });

  it('eager switched on or off is compatible and reported', () => {
    const diff = edited((c) => {
      find(c, 'offers.notify').eager = false;
      find(c, 'offers.remind').eager = true;
    });
    expect(diff.breaking).toEqual([]);
    expect(summary(diff.compatible)).toEqual([
      'receiver-eager-changed: receiver offers.notify is no longer eager: only the relay attempts it',
      'receiver-eager-changed: receiver offers.remind is now eager: also attempted right after commit in the firing process, the relay the fallback',
    ]);
  });

  it('give-up-after, lease and backoff changes are compatible tuning', () => {
    const diff = edited((c) => {
      const r = find(c, 'offers.fanOut');
      r.giveUpAfterSeconds = null;
      r.leaseSeconds = 90;
      r.backoff.baseSeconds = 5;
      find(c, 'offers.remind').giveUpAfterSeconds = 3600;
    });
    expect(diff.breaking).toEqual([]);
    expect(summary(diff.compatible)).toEqual([
      'receiver-changed: receiver offers.fanOut: leaseSeconds 45 → 90, giveUpAfterSeconds 21600 → default, backoff 2..300 → 5..300',
      'receiver-changed: receiver offers.remind: giveUpAfterSeconds default → 3600',
    ]);
  });

  it('a pattern receiver moved to another pattern, or to AnyEvent, is breaking', () => {
    const diff = edited((c) => {
      find(c, 'library.index').pattern = 'books.*';
      find(c, 'offers.log').pattern = null;
    });
    expect(summary(diff.breaking)).toEqual([
      'receiver-moved: receiver library.index now listens to the topic pattern books.* instead of the topic pattern library.*',
      'receiver-moved: receiver offers.log now listens to every event (AnyEvent) instead of the topic pattern offers.*',
    ]);
  });

  it('a catalogue written before eager and pattern were published diffs as no change', () => {
    const older = timing();
    for (const r of [...older.events.flatMap((e) => e.receivers), ...older.wildcardReceivers]) {
      if (r.pattern !== null || r.eager) continue;
      delete (r as Partial<typeof r>).eager;
      delete (r as Partial<typeof r>).pattern;
    }
    expect(diffCatalogues(older, timing())).toEqual({ breaking: [], compatible: [] });
  });
});
