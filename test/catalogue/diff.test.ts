import { describe, expect, it } from 'vitest';
import { type CatalogueChange, diffCatalogues } from '../../catalogue/diff.js';
import { buildCatalogue, type Catalogue } from '../../src/introspect/index.js';
import { shopConfig } from './support.js';

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

  it("a removed receiver, a receiver's mode or lane changed, and a moved receiver are breaking", () => {
    const diff = changed((c) => {
      const e = placed(c);
      e.receivers = e.receivers.filter((r) => r.key !== 'stock.reserve');
      e.receivers[0].mode = 'onCommit';
      c.wildcardReceivers[1].lane = 'slow';
      c.wildcardReceivers[0].event = 'shop.OrderPlaced';
    });
    // Wildcards sort first (their event is "*"), then by event and receiver key.
    expect(summary(diff.breaking)).toEqual([
      'receiver-lane-changed: receiver zz.bridge lane changed from default to slow',
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
