import { describe, expect, it } from 'vitest';
import { AnyEvent, ValidationError } from '../../src/index.js';
import { buildCatalogue, listensFor, whatListensTo } from '../../src/introspect/index.js';
import { shopConfig } from './support.js';

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
        "event": null,
        "giveUpAfterSeconds": null,
        "key": "zz.bridge",
        "kind": "delivery",
        "lane": "default",
        "leaseSeconds": null,
        "location": null,
        "maxAttempts": 5,
        "mode": "durable",
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
