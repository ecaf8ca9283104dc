import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import {
  type AsyncApiDocument,
  buildAsyncApi,
  OUTBOX_HEADERS,
  renderAsyncApi,
} from '../../catalogue/asyncapi.js';
import { toAsyncApiSchema } from '../../catalogue/asyncapi-schema.js';
import { parseCatalogue } from '../../catalogue/read-catalogue.js';
import { AnyEvent, defineOutbox, event, receiver } from '../../src/index.js';
import { buildCatalogue, type Catalogue } from '../../src/introspect/index.js';
import { shopConfig, timingConfig } from './support.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const OPTIONS = { title: 'shop', version: '1.2.3' };

/**
 * The AsyncAPI parser, loaded only here: it is heavy (Spectral, JSON Schema validators) and a
 * devDependency, never loaded by the package. Returns the errors only (severity 0); warnings
 * and hints (a newer AsyncAPI version exists, no servers are declared) are not failures.
 */
async function parseErrors(text: string) {
  const { Parser, DiagnosticSeverity } = await import('@asyncapi/parser');
  const parser = new Parser();
  const { document, diagnostics } = await parser.parse(text);
  const errors = diagnostics
    .filter((d) => d.severity === DiagnosticSeverity.Error)
    .map((d) => `${d.code}: ${d.message} at ${d.path.join('.')}`);
  return { document, errors };
}

type Json = Record<string, unknown>;
const at = (value: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((node, key) => (node as Json | undefined)?.[key], value);
const operations = (doc: AsyncApiDocument) => doc.operations as Record<string, Json>;

function repoCatalogue(): Catalogue {
  const file = join(REPO, 'catalogue/catalogue.json');
  return parseCatalogue(readFileSync(file, 'utf8'), file);
}

describe('the AsyncAPI document of a catalogue', () => {
  it("the repo's own catalogue is an AsyncAPI 3.0.0 document the parser accepts with no errors", async () => {
    const catalogue = repoCatalogue();
    const text = renderAsyncApi(catalogue, OPTIONS);
    const { document, errors } = await parseErrors(text);
    expect(errors).toEqual([]);
    expect(document?.version()).toBe('3.0.0');
    expect(
      document
        ?.channels()
        .all()
        .map((c) => c.address()),
    ).toEqual(catalogue.events.map((e) => e.name));
  }, 60_000);

  it('a wildcard, a pattern receiver, a due receiver and a fan-out give a document the parser accepts, as YAML and as JSON', async () => {
    const catalogue = buildCatalogue(timingConfig());
    for (const format of ['yaml', 'json'] as const) {
      const { document, errors } = await parseErrors(
        renderAsyncApi(catalogue, { ...OPTIONS, format }),
      );
      expect(errors, format).toEqual([]);
      const receives = document
        ?.operations()
        .all()
        .filter((o) => o.action() === 'receive')
        .map((o) => `${o.id()} ${o.channels().all()[0]?.address()}`)
        .sort();
      expect(receives, format).toEqual([
        'all.bridge__library.BookAdded library.BookAdded',
        'all.bridge__offers.OfferMade offers.OfferMade',
        'library.index__library.BookAdded library.BookAdded',
        'offers.expire offers.OfferMade',
        'offers.fanOut offers.OfferMade',
        'offers.log__offers.OfferMade offers.OfferMade',
        'offers.notify offers.OfferMade',
        'offers.remind offers.OfferMade',
      ]);
    }
  }, 60_000);

  it('a config with no events gives an empty document the parser accepts', async () => {
    const { document, errors } = await parseErrors(
      renderAsyncApi(buildCatalogue(defineOutbox({ events: {} })), OPTIONS),
    );
    expect(errors).toEqual([]);
    expect(document?.channels().all()).toEqual([]);
  }, 60_000);

  it('a recursive payload and a tuple are restated in draft-07 terms the parser resolves', async () => {
    type Node = { name: string; children: Node[] };
    const NodeSchema: z.ZodType<Node> = z.lazy(() =>
      z.object({ name: z.string(), children: z.array(NodeSchema) }),
    );
    const Tree = event({
      schema: z.object({ root: NodeSchema, pair: z.tuple([z.string(), z.number()]) }),
    });
    const config = defineOutbox({
      events: { 'docs.TreeSaved': Tree },
      receivers: { 'docs.index': receiver(Tree, { handle: async () => {} }) },
    });
    const { errors } = await parseErrors(renderAsyncApi(buildCatalogue(config), OPTIONS));
    expect(errors).toEqual([]);
  }, 60_000);
});

describe('channels and messages', () => {
  const catalogue = buildCatalogue(shopConfig());
  const doc = buildAsyncApi(catalogue, OPTIONS);

  it('info carries the title and version given, and the document is AsyncAPI 3.0.0 with JSON content', () => {
    expect(doc.asyncapi).toBe('3.0.0');
    expect(at(doc, 'info', 'title')).toBe('shop');
    expect(at(doc, 'info', 'version')).toBe('1.2.3');
    expect(doc.defaultContentType).toBe('application/json');
  });

  it('one channel per event, its address the event name, with one message', () => {
    const channels = doc.channels as Record<string, Json>;
    expect(Object.keys(channels)).toEqual(['shop.OrderCancelled', 'shop.OrderPlaced']);
    expect(channels['shop.OrderPlaced']).toEqual({
      address: 'shop.OrderPlaced',
      title: 'shop.OrderPlaced',
      description: 'A customer placed an order.',
      messages: { 'shop.OrderPlaced': { $ref: '#/components/messages/shop.OrderPlaced' } },
    });
  });

  it("the message's payload is the event's JSON Schema, and its name, title and summary carry the version and description", () => {
    const message = at(doc, 'components', 'messages', 'shop.OrderPlaced') as Json;
    expect(message.name).toBe('shop.OrderPlaced');
    expect(message.title).toBe('shop.OrderPlaced v1');
    expect(message.summary).toBe('A customer placed an order. (version 1)');
    expect(message.contentType).toBe('application/json');
    const { $schema: _, ...schema } = catalogue.events[1]?.schema ?? {};
    expect(message.payload).toEqual(schema);
    expect(message['x-outboxkit-event']).toEqual({
      name: 'shop.OrderPlaced',
      version: 1,
      retentionSeconds: null,
      deleteWhen: null,
      migratesOlderRows: false,
    });
    const cancelled = at(doc, 'components', 'messages', 'shop.OrderCancelled') as Json;
    expect(cancelled.summary).toBe('shop.OrderCancelled v1.');
    expect(cancelled.description).toContain('Recorded events are kept 2d.');
  });

  it('the standard headers: the event id (UUIDv7), the topic, the version, and the W3C trace context', () => {
    const headers = at(doc, 'components', 'messages', 'shop.OrderPlaced', 'headers') as Json;
    expect(Object.keys(headers.properties as Json)).toEqual([
      'outbox-event-id',
      'outbox-topic',
      'outbox-event-version',
      'traceparent',
      'tracestate',
    ]);
    expect(at(headers, 'properties', OUTBOX_HEADERS.topic, 'const')).toBe('shop.OrderPlaced');
    expect(at(headers, 'properties', OUTBOX_HEADERS.version, 'const')).toBe('1');
    expect(headers.required).toEqual(['outbox-event-id', 'outbox-topic']);
    const uuid = new RegExp(at(headers, 'properties', 'outbox-event-id', 'pattern') as string);
    expect(uuid.test('01890a5d-ac96-774b-bcce-b302099a8057')).toBe(true);
    expect(uuid.test('6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe(false); // v1
    const trace = new RegExp(at(headers, 'properties', 'traceparent', 'pattern') as string);
    expect(trace.test('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toBe(true);
    expect(Object.keys(headers.patternProperties as Json)).toEqual(['^outbox-scope-']);
  });
});

describe('operations', () => {
  const doc = buildAsyncApi(buildCatalogue(timingConfig()), OPTIONS);
  const ops = operations(doc);

  it('a send operation per channel, for the application firing the event', () => {
    expect(ops['send__offers.OfferMade']).toMatchObject({
      action: 'send',
      channel: { $ref: '#/channels/offers.OfferMade' },
      title: 'fire offers.OfferMade',
      messages: [{ $ref: '#/channels/offers.OfferMade/messages/offers.OfferMade' }],
    });
    expect(Object.keys(ops).filter((id) => ops[id]?.action === 'send')).toEqual([
      'send__library.BookAdded',
      'send__offers.OfferMade',
    ]);
  });

  it('the send operation names every durable receiver the event is owed to, wildcards included', () => {
    expect(at(ops, 'send__library.BookAdded', 'description')).toBe(
      "outbox.fire('library.BookAdded', payload, { transaction }) records the event with the caller's transaction: it exists if and only if the transaction commits. In the same transaction it writes a delivery row for each durable receiver: all.bridge, library.index. Run in the firing process, not through this channel: library.audit (onCommit).",
    );
  });

  it('one receive operation per durable receiver, named by its key, with lane, mode and timing in its description and x-outboxkit-receiver', () => {
    const expire = ops['offers.expire'] as Json;
    expect(expire.title).toBe('offers.expire');
    expect(expire.description).toBe(
      'A handler, durable, on lane slow (relays started with --lane slow). Due when function expiryOf says. Up to 5 attempt(s), then dead-lettered.',
    );
    expect(at(expire, 'x-outboxkit-receiver', 'lane')).toBe('slow');
    expect(at(expire, 'x-outboxkit-receiver', 'dueCallable')).toBe('function expiryOf');
    expect(at(ops, 'offers.remind', 'description')).toContain(
      "Due 2d after the event's occurredAt.",
    );
    expect(at(ops, 'offers.fanOut', 'description')).toBe(
      'A transport (noop), durable, on lane webhooks (relays started with --lane webhooks). Due as soon as the event is recorded. Fans out: one delivery per target of function tenantsOf. Up to 5 attempt(s), then dead-lettered. Its own lease 45s, backoff base 2s, backoff cap 300s, deferrals given up after 6h; the settings otherwise.',
    );
    expect(at(ops, 'offers.notify', 'description')).toContain(
      'Also attempted right after commit in the firing process (eager).',
    );
  });

  it('a wildcard receiver is a receive operation on every channel it matches, a pattern one only on the channels its prefix matches', () => {
    const wildcardOps = Object.entries(ops)
      .filter(([, o]) => at(o, 'x-outboxkit-receiver', 'event') === null)
      .map(([id, o]) => `${id} -> ${at(o, 'channel', '$ref')}`);
    expect(wildcardOps).toEqual([
      'all.bridge__library.BookAdded -> #/channels/library.BookAdded',
      'all.bridge__offers.OfferMade -> #/channels/offers.OfferMade',
      'library.index__library.BookAdded -> #/channels/library.BookAdded',
      'offers.log__offers.OfferMade -> #/channels/offers.OfferMade',
    ]);
    expect(at(ops, 'library.index__library.BookAdded', 'summary')).toBe(
      'library.index receives library.BookAdded (declared for the pattern library.*).',
    );
    expect(at(ops, 'all.bridge__offers.OfferMade', 'summary')).toBe(
      'all.bridge receives offers.OfferMade (declared for AnyEvent).',
    );
  });

  it('every wildcard is declared once in x-outboxkit-wildcards with the events it matches, one matching none included', () => {
    const config = defineOutbox({
      events: { 'shop.OrderPlaced': event({ schema: z.object({ id: z.string() }) }) },
      receivers: {
        'later.audit': receiver('billing.*', { handle: async () => {} }),
        'all.bridge': receiver(AnyEvent, { deliver: async () => {} }),
      },
    });
    const wildcards = buildAsyncApi(buildCatalogue(config), OPTIONS)['x-outboxkit-wildcards'];
    expect((wildcards as Json[]).map((w) => [w.key, w.pattern, w.matches])).toEqual([
      ['all.bridge', null, ['shop.OrderPlaced']],
      ['later.audit', 'billing.*', []],
    ]);
  });

  it('inline and onCommit receivers are no receive operation: the send operation lists them', () => {
    expect(Object.keys(ops)).not.toContain('library.audit__library.BookAdded');
    expect(at(ops, 'send__library.BookAdded', 'x-outboxkit-in-process-receivers')).toEqual([
      { key: 'library.audit', mode: 'onCommit', pattern: 'library.*', wildcard: true },
    ]);
    const shop = operations(buildAsyncApi(buildCatalogue(shopConfig()), OPTIONS));
    expect(Object.keys(shop)).not.toContain('stock.reserve');
    expect(at(shop, 'send__shop.OrderPlaced', 'description')).toContain(
      'Run in the firing process, not through this channel: aa.audit (onCommit), stock.reserve (inline).',
    );
  });
});

describe('rendering', () => {
  const catalogue = buildCatalogue(timingConfig());

  it('YAML by default, JSON on request, both ending in exactly one newline and describing the same document', () => {
    const yaml = renderAsyncApi(catalogue, OPTIONS);
    const json = renderAsyncApi(catalogue, { ...OPTIONS, format: 'json' });
    expect(yaml.startsWith('asyncapi: 3.0.0\n')).toBe(true);
    for (const text of [yaml, json]) {
      expect(text.endsWith('\n')).toBe(true);
      expect(text.endsWith('\n\n')).toBe(false);
    }
    expect(parseYaml(yaml)).toEqual(JSON.parse(json));
    expect(JSON.parse(json)).toEqual(buildAsyncApi(catalogue, OPTIONS));
    expect(yaml).not.toMatch(/[&*]a\d/); // no YAML anchors for the receivers shared by operations
  });

  it('is deterministic: a catalogue with its lists in another order renders to the same text', () => {
    const shuffled: Catalogue = {
      ...catalogue,
      events: [...catalogue.events].reverse().map((e) => ({
        ...e,
        receivers: [...e.receivers].reverse(),
      })),
      wildcardReceivers: [...catalogue.wildcardReceivers].reverse(),
    };
    expect(renderAsyncApi(shuffled, OPTIONS)).toBe(renderAsyncApi(catalogue, OPTIONS));
  });

  it('ids are the names, characters other than letters, digits, . _ and - as _, and a name that would take a taken id gets _2', () => {
    const config = defineOutbox({
      events: {
        'ns:Thing': event({ schema: z.object({}) }),
        ns_Thing: event({ schema: z.object({}) }),
        'shop.Order-Placed': event({ schema: z.object({}) }),
      },
    });
    const doc = buildAsyncApi(buildCatalogue(config), OPTIONS);
    const channels = doc.channels as Record<string, Json>;
    expect(Object.entries(channels).map(([id, c]) => `${id} ${c.address}`)).toEqual([
      'ns_Thing ns:Thing',
      'ns_Thing_2 ns_Thing',
      'shop.Order-Placed shop.Order-Placed',
    ]);
  });

  it('operation ids that collide are suffixed the same way whatever order the catalogue lists them in', () => {
    const Ping = event({ schema: z.object({}) });
    const config = defineOutbox({
      events: { ping: Ping },
      receivers: {
        'a:b': receiver(Ping, { handle: async () => {} }),
        a_b: receiver(Ping, { handle: async () => {} }),
        send__ping: receiver(Ping, { handle: async () => {} }),
      },
    });
    const catalogue = buildCatalogue(config);
    const reversed: Catalogue = {
      ...catalogue,
      events: catalogue.events.map((e) => ({ ...e, receivers: [...e.receivers].reverse() })),
    };
    for (const c of [catalogue, reversed]) {
      const ops = operations(buildAsyncApi(c, OPTIONS));
      expect(Object.entries(ops).map(([id, o]) => `${id} ${o.title}`)).toEqual([
        'a_b a:b',
        'a_b_2 a_b',
        'send__ping fire ping',
        'send__ping_2 send__ping',
      ]);
    }
  });
});

describe('the payload schema in draft-07 terms', () => {
  const base = '#/components/messages/x/payload';

  it('drops $schema, turns prefixItems into items and the rest into additionalItems', () => {
    expect(
      toAsyncApiSchema(
        {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'array',
          prefixItems: [{ type: 'string' }, { type: 'number' }],
          items: false,
        },
        base,
      ),
    ).toEqual({
      type: 'array',
      items: [{ type: 'string' }, { type: 'number' }],
      additionalItems: false,
    });
  });

  it('points local references into the document and keeps the siblings of a $ref', () => {
    expect(
      toAsyncApiSchema(
        {
          type: 'object',
          properties: {
            self: { $ref: '#' },
            node: { $ref: '#/$defs/Node', description: 'kept' },
            remote: { $ref: 'https://example.com/schema.json' },
          },
          $defs: { Node: { type: 'object', properties: { next: { $ref: '#/$defs/Node' } } } },
        },
        base,
      ),
    ).toEqual({
      type: 'object',
      properties: {
        self: { $ref: base },
        node: { description: 'kept', allOf: [{ $ref: `${base}/$defs/Node` }] },
        remote: { $ref: 'https://example.com/schema.json' },
      },
      $defs: { Node: { type: 'object', properties: { next: { $ref: `${base}/$defs/Node` } } } },
    });
  });
});
