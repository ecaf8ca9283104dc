import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AnyEvent, defineOutbox, event, receiver, ValidationError } from '../../src/index.js';
import {
  buildCatalogue,
  type CatalogueReceiver,
  listensFor,
  whatListensTo,
} from '../../src/introspect/index.js';
import { shopConfig, timingConfig } from './support.js';

describe('catalogue()', () => {
  const catalogue = buildCatalogue(shopConfig());

  it('is sorted by name throughout: events, fields, receivers', () => {
    expect(catalogue.events.map((e) => e.name)).toEqual([
      'shop.OrderCancelled',
      'shop.OrderPlaced',
    ]);
    expect(catalogue.events[1].fields.map((f) => f.name)).toEqual([
      'coupon',
      'items',
      'items[].quantity',
      'items[].sku',
      'orderId',
    ]);
    expect(catalogue.events[1].receivers.map((r) => r.key)).toEqual([
      'mail.confirm',
      'stock.reserve',
    ]);
  });

  it('lists wildcard receivers once, in their own section, and under no event', () => {
    expect(catalogue.wildcardReceivers.map((r) => r.key)).toEqual(['aa.audit', 'zz.bridge']);
    const under = catalogue.events.flatMap((e) => e.receivers.map((r) => r.key));
    expect(under).not.toContain('aa.audit');
    expect(under).not.toContain('zz.bridge');
  });

  it('describes fields with type and required; a defaulted field is not required', () => {
    expect(catalogue.events[0].fields).toMatchInlineSnapshot(`
      [
        {
          "description": null,
          "name": "orderId",
          "required": true,
          "type": "string",
        },
        {
          "description": null,
          "name": "reason",
          "required": false,
          "type": "string",
        },
      ]
    `);
  });

  it('publishes retention in seconds and the payload JSON Schema', () => {
    const cancelled = catalogue.events[0];
    expect(cancelled.retentionSeconds).toBe(2 * 86_400);
    expect(cancelled.deleteWhen).toBeNull();
    expect(cancelled.schema).toMatchObject({
      type: 'object',
      properties: { orderId: { type: 'string' }, reason: { type: 'string', default: 'unknown' } },
      required: ['orderId'],
    });
  });

  it('describes a receiver with its guarantees, defaults as null, and no location', () => {
    expect(catalogue.wildcardReceivers[1]).toMatchInlineSnapshot(`
      {
        "backoff": {
          "baseSeconds": 5,
          "capSeconds": null,
        },
        "dueCallable": null,
        "dueSeconds": null,
        "eager": false,
        "event": null,
        "giveUpAfterSeconds": null,
        "key": "zz.bridge",
        "kind": "delivery",
        "lane": "default",
        "leaseSeconds": null,
        "location": null,
        "maxAttempts": 5,
        "mode": "durable",
        "pattern": null,
        "site": "relay",
        "targets": null,
        "timeoutSeconds": null,
        "transport": "noop",
      }
    `);
  });

  it('does not depend on declaration order', () => {
    const again = buildCatalogue(shopConfig());
    expect(JSON.stringify(again)).toBe(JSON.stringify(catalogue));
  });
});

describe('whatListensTo and listensFor', () => {
  const config = shopConfig();

  it('whatListensTo(event) is every receiver declared for it, sorted by key, without wildcards', () => {
    expect(whatListensTo(config, 'shop.OrderPlaced').map((r) => r.key)).toEqual([
      'mail.confirm',
      'stock.reserve',
    ]);
    expect(whatListensTo(config, config.events['shop.OrderCancelled']).map((r) => r.key)).toEqual([
      'stock.release',
    ]);
  });

  it('whatListensTo(AnyEvent) returns exactly the wildcards', () => {
    expect(whatListensTo(config, AnyEvent).map((r) => r.key)).toEqual(['aa.audit', 'zz.bridge']);
  });

  it('whatListensTo refuses an undeclared name instead of answering "nothing"', () => {
    expect(() => whatListensTo(config, 'shop.OrderPlace')).toThrowError(ValidationError);
    expect(() => whatListensTo(config, 'shop.OrderPlace')).toThrowErrorMatchingInlineSnapshot(
      `[ValidationError: whatListensTo: "shop.OrderPlace" is not a declared event — did you mean "shop.OrderPlaced"?]`,
    );
  });

  it('listensFor names the event of a receiver, and nothing for a wildcard or an unknown key', () => {
    expect(listensFor(config, 'mail.confirm')).toBe('shop.OrderPlaced');
    expect(listensFor(config, 'zz.bridge')).toBeUndefined();
    expect(listensFor(config, 'no.such.receiver')).toBeUndefined();
  });
});

describe('catalogue() publishes what is declared', () => {
  const catalogue = buildCatalogue(timingConfig());
  const all = [...catalogue.events.flatMap((e) => e.receivers), ...catalogue.wildcardReceivers];
  const published = (key: string): CatalogueReceiver => {
    const found = all.find((r) => r.key === key);
    if (!found) throw new Error(`no receiver ${key} in the catalogue`);
    return found;
  };

  it("publishes each receiver's lane, and 'default' where it declares none", () => {
    expect(Object.fromEntries(all.map((r) => [r.key, r.lane]))).toEqual({
      'all.bridge': 'default',
      'library.audit': 'default',
      'library.index': 'default',
      'offers.expire': 'slow',
      'offers.fanOut': 'webhooks',
      'offers.log': 'default',
      'offers.notify': 'default',
      'offers.remind': 'default',
    });
  });

  it('publishes eager', () => {
    expect(all.filter((r) => r.eager).map((r) => r.key)).toEqual(['offers.notify']);
  });

  it('publishes a due delay in seconds, counted from occurredAt, and no due callable', () => {
    expect(published('offers.remind')).toMatchObject({ dueSeconds: 48 * 3600, dueCallable: null });
  });

  it('publishes a due function by name in the runtime catalogue (its file:line is codegen’s), and no due seconds', () => {
    expect(published('offers.expire')).toMatchObject({
      dueSeconds: null,
      dueCallable: 'function expiryOf',
    });
  });

  it('a fan-out publishes its targets function, never null, so it never reads as a plain receiver', () => {
    expect(published('offers.fanOut').targets).toBe('function tenantsOf');
    expect(published('library.index').targets).toBe('function targets');
    expect(published('offers.notify').targets).toBeNull();
  });

  it('at most one of dueSeconds and dueCallable is set; a receiver with neither runs on record', () => {
    for (const r of all) expect(r.dueSeconds === null || r.dueCallable === null).toBe(true);
    expect(published('offers.notify')).toMatchObject({ dueSeconds: null, dueCallable: null });
  });

  it('publishes give-up-after in seconds, its own lease and backoff, and null where the setting applies', () => {
    expect(published('offers.fanOut')).toMatchObject({
      giveUpAfterSeconds: 6 * 3600,
      leaseSeconds: 45,
      backoff: { baseSeconds: 2, capSeconds: 300 },
      maxAttempts: 5,
      mode: 'durable',
      site: 'relay',
    });
    expect(published('offers.remind')).toMatchObject({
      giveUpAfterSeconds: null,
      leaseSeconds: null,
      backoff: { baseSeconds: null, capSeconds: null },
    });
  });

  it('migratesOlderRows says whether the event declares an upgrade', () => {
    expect(Object.fromEntries(catalogue.events.map((e) => [e.name, e.migratesOlderRows]))).toEqual({
      'library.BookAdded': false,
      'offers.OfferMade': true,
    });
  });

  it('lists topic-pattern receivers with the wildcards, once, sorted by key, each with its pattern', () => {
    expect(catalogue.wildcardReceivers.map((r) => [r.key, r.pattern])).toEqual([
      ['all.bridge', null],
      ['library.audit', 'library.*'],
      ['library.index', 'library.*'],
      ['offers.log', 'offers.*'],
    ]);
    for (const r of catalogue.wildcardReceivers) expect(r.event).toBeNull();
  });

  it('lists a pattern receiver under no event, not even the events it matches', () => {
    const under = catalogue.events.flatMap((e) => e.receivers.map((r) => r.key));
    expect(under).toEqual(['offers.expire', 'offers.fanOut', 'offers.notify', 'offers.remind']);
    for (const r of catalogue.events.flatMap((e) => e.receivers)) expect(r.pattern).toBeNull();
  });

  it('names an anonymous function as such', () => {
    const [anonymous] = [() => ['a']];
    const config = defineOutbox({
      events: { 'a.Happened': event({ schema: z.object({}) }) },
      receivers: {
        'a.fan': receiver('a.Happened', { handle: async () => {}, targets: anonymous }),
      },
    });
    expect(buildCatalogue(config).events[0].receivers[0].targets).toBe('anonymous function');
  });
});

describe('whatListensTo and listensFor with topic patterns', () => {
  const config = timingConfig();
  const keys = (receivers: readonly { key: string }[]) => receivers.map((r) => r.key);

  it('whatListensTo(name) leaves out every wildcard, the patterns that match the name too', () => {
    expect(keys(whatListensTo(config, 'library.BookAdded'))).toEqual([]);
    expect(keys(whatListensTo(config, 'offers.OfferMade'))).toEqual([
      'offers.expire',
      'offers.fanOut',
      'offers.notify',
      'offers.remind',
    ]);
  });

  it('whatListensTo(AnyEvent) returns every wildcard, the pattern receivers included', () => {
    expect(keys(whatListensTo(config, AnyEvent))).toEqual([
      'all.bridge',
      'library.audit',
      'library.index',
      'offers.log',
    ]);
  });

  it('whatListensTo(pattern) returns the receivers declared for exactly that pattern', () => {
    expect(keys(whatListensTo(config, 'library.*'))).toEqual(['library.audit', 'library.index']);
    expect(keys(whatListensTo(config, 'offers.*'))).toEqual(['offers.log']);
  });

  it('whatListensTo refuses a pattern no receiver declares, and one that is not a pattern', () => {
    expect(() => whatListensTo(config, 'librar.*')).toThrowErrorMatchingInlineSnapshot(
      `[ValidationError: whatListensTo: no receiver is declared for the topic pattern "librar.*" — did you mean "library.*"?]`,
    );
    expect(() => whatListensTo(config, 'zzz.*')).toThrowErrorMatchingInlineSnapshot(
      `[ValidationError: whatListensTo: no receiver is declared for the topic pattern "zzz.*" (declared patterns: "library.*", "offers.*")]`,
    );
    expect(() => whatListensTo(config, 'lib*.x')).toThrowError(ValidationError);
    expect(() => whatListensTo(config, 'lib*.x')).toThrowError(/is not a topic pattern/);
  });

  it('listensFor is undefined for a pattern receiver, which names no single event', () => {
    expect(listensFor(config, 'library.index')).toBeUndefined();
    expect(config.receiver('library.index')?.pattern).toBe('library.*');
    expect(listensFor(config, 'offers.expire')).toBe('offers.OfferMade');
  });
});
