import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { diffCatalogues } from '../../catalogue/diff.js';
import { decodeEvent } from '../../src/codec/decode-event.js';
import {
  buildCatalogue,
  ConfigurationError,
  defineOutbox,
  event,
  getBody,
  getHeaders,
  type OutboxEvent,
  PayloadDecodeError,
  receiver,
  ValidationError,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { StoredEvent } from '../../src/storage/store.js';
import type { TestDatabase } from '../../testing/databases.js';
import { freshPrefix, openOutbox, rowsOf } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

/** A payload JSON cannot carry as itself: superjson's reason to exist. */
const Rich = z.object({
  at: z.date(),
  amount: z.bigint(),
  tags: z.set(z.string()),
  stock: z.map(z.string(), z.number()),
  note: z.string().optional(),
});

const richPayload = () => ({
  at: new Date('2031-03-01T12:00:00.000Z'),
  amount: 12345678901234567890n,
  tags: new Set(['a', 'b']),
  stock: new Map([['tea', 3]]),
});

/** A config whose `shop.Rich` is declared with `definition`, recording what it hands over. */
function richConfig(definition: ReturnType<typeof event>, seen: OutboxEvent[], settings = {}) {
  return defineOutbox({
    events: { 'shop.Rich': definition },
    receivers: { 'audit.rich': receiver(definition, { handle: (e) => void seen.push(e) }) },
    settings,
  });
}

async function storedRows(outbox: { config: unknown }) {
  return runtimeOf(outbox as never).store.readEvents({});
}

describeEachDialect('payload codecs: json (the default) and superjson', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  it('a superjson event stores superjson’s document and hands receivers a Date, a bigint, a Set and a Map', async () => {
    const seen: OutboxEvent[] = [];
    const outbox = await openOutbox(
      db,
      richConfig(event({ schema: Rich, codec: 'superjson' }), seen),
    );
    const fired = await outbox.fire('shop.Rich', richPayload());
    expect(fired.headers).toEqual({ 'outbox-codec': 'superjson' });
    const [row] = await storedRows(outbox);
    const stored = typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload;
    expect(stored.json).toEqual({
      at: '2031-03-01T12:00:00.000Z',
      amount: '12345678901234567890',
      tags: ['a', 'b'],
      stock: [['tea', 3]],
    });
    expect(stored.meta.values).toMatchObject({ at: ['Date'], amount: ['bigint'] });
    await outbox.deliverPending();
    expect((await rowsOf(outbox, 'audit.rich'))[0].status).toBe('succeeded');
    const payload = seen[0].payload as ReturnType<typeof richPayload>;
    expect(payload.at).toBeInstanceOf(Date);
    expect(payload.at.toISOString()).toBe('2031-03-01T12:00:00.000Z');
    expect(payload.amount).toBe(12345678901234567890n);
    expect(payload.tags).toEqual(new Set(['a', 'b']));
    expect(payload.stock).toEqual(new Map([['tea', 3]]));
    await outbox.close();
  });

  it('settings.codec chooses the codec of every event that names none; an event naming json keeps json', async () => {
    const seen: OutboxEvent[] = [];
    const Plain = event({ schema: z.object({ at: z.coerce.date() }), codec: 'json' });
    const Default = event({ schema: z.object({ at: z.date() }) });
    const outbox = await openOutbox(
      db,
      defineOutbox({
        events: { 'shop.Plain': Plain, 'shop.Default': Default },
        receivers: {
          'audit.plain': receiver(Plain, { handle: (e) => void seen.push(e) }),
          'audit.default': receiver(Default, { handle: (e) => void seen.push(e) }),
        },
        settings: { codec: 'superjson' },
      }),
    );
    expect(outbox.config.eventList.map((e) => [e.name, e.codec])).toEqual([
      ['shop.Default', 'superjson'],
      ['shop.Plain', 'json'],
    ]);
    const at = new Date('2031-01-01T00:00:00.000Z');
    expect((await outbox.fire('shop.Plain', { at })).headers).toEqual({});
    expect((await outbox.fire('shop.Default', { at })).headers).toEqual({
      'outbox-codec': 'superjson',
    });
    await outbox.deliverPending();
    expect(seen.map((e) => (e.payload as { at: Date }).at)).toEqual([at, at]);
    await outbox.close();
  });

  it('a stored event decodes with the codec it was written with, whatever the declaration says now', async () => {
    const tablePrefix = freshPrefix();
    const at = new Date('2031-03-01T12:00:00.000Z');
    // Written as superjson, then the event is declared json (and a coercing schema).
    const before = await openOutbox(
      db,
      richConfig(event({ schema: z.object({ at: z.date() }), codec: 'superjson' }), []),
      { tablePrefix },
    );
    await before.fire('shop.Rich', { at });
    // And one written as json, then read by a superjson declaration.
    const seen: OutboxEvent[] = [];
    const json = await openOutbox(
      db,
      richConfig(event({ schema: z.object({ at: z.coerce.date() }) }), []),
      { tablePrefix },
    );
    await json.fire('shop.Rich', { at });
    const after = await openOutbox(
      db,
      richConfig(event({ schema: z.object({ at: z.coerce.date() }), codec: 'superjson' }), seen),
      { tablePrefix },
    );
    const counts = await after.deliverPending();
    expect(counts.succeeded).toBe(2);
    expect(seen.map((e) => [e.headers, (e.payload as { at: Date }).at])).toEqual([
      [{ 'outbox-codec': 'superjson' }, at],
      [{}, at],
    ]);
    await Promise.all([before.close(), json.close(), after.close()]);
  });

  it('a superjson payload it cannot carry is refused at fire, naming its path, before anything is written', async () => {
    class Money {
      constructor(readonly cents: number) {}
    }
    const outbox = await openOutbox(
      db,
      richConfig(
        event({ schema: z.object({ price: z.instanceof(Money) }), codec: 'superjson' }),
        [],
      ),
    );
    const error = await outbox.fire('shop.Rich', { price: new Money(5) } as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(
      /shop\.Rich payload\.price is an instance of Money without toJSON\(\).*\(superjson carries .* a class only once registered with SuperJSON\.registerClass\); nothing was written$/,
    );
    expect(await storedRows(outbox)).toEqual([]);
    await outbox.close();
  });

  it('fire() refuses a header named outbox-codec: the outbox records the codec there', async () => {
    const outbox = await openOutbox(db, richConfig(event({ schema: z.object({}) }), []));
    await expect(
      outbox.fire('shop.Rich', {}, { headers: { 'outbox-codec': 'superjson' } }),
    ).rejects.toThrow(/headers names "outbox-codec", which is the outbox's own/);
    expect(await storedRows(outbox)).toEqual([]);
    await outbox.close();
  });

  it("a transport's body is the payload as its codec stores it, and the header says which", async () => {
    const seen: OutboxEvent[] = [];
    const outbox = await openOutbox(
      db,
      richConfig(event({ schema: Rich, codec: 'superjson' }), seen),
    );
    await outbox.fire('shop.Rich', richPayload());
    await outbox.deliverPending();
    const body = JSON.parse(getBody(seen[0]));
    expect(body.json.amount).toBe('12345678901234567890');
    expect(body.meta.values.amount).toEqual(['bigint']);
    expect(getHeaders(seen[0])['outbox-codec']).toBe('superjson');
    await outbox.close();
  });
});

describe('payload codecs: declaring them', () => {
  it('z.date(), z.bigint(), z.map() and z.set() are refused for a json event and taken for a superjson one', () => {
    expect(() => defineOutbox({ events: { 'a.A': event({ schema: Rich }) } })).toThrow(
      ConfigurationError,
    );
    expect(() =>
      defineOutbox({ events: { 'a.A': event({ schema: Rich, codec: 'superjson' }) } }),
    ).not.toThrow();
    expect(() =>
      defineOutbox({
        events: { 'a.A': event({ schema: Rich }) },
        settings: { codec: 'superjson' },
      }),
    ).not.toThrow();
    // Still refused under superjson: what no codec can carry.
    expect(() =>
      defineOutbox({
        events: {
          'a.A': event({ schema: z.object({ f: z.function() as never }), codec: 'superjson' }),
        },
      }),
    ).toThrow(/JSON cannot hold/);
  });

  it('refuses a codec it does not know, naming the choices', () => {
    expect(() =>
      defineOutbox({
        events: { 'a.A': event({ schema: z.object({}), codec: 'msgpack' as never }) },
      }),
    ).toThrow(
      /codec names the codec "msgpack", which this outbox does not have \(it has "json", "superjson"\)/,
    );
    expect(() => defineOutbox({ events: {}, settings: { codec: 'yaml' } })).toThrow(
      /settings\.codec names the codec "yaml", which this outbox does not have/,
    );
    expect(() => defineOutbox({ events: {}, settings: { codec: 3 as never } })).toThrow(
      /settings\.codec must be a codec name: "json", "superjson" or one declared in defineOutbox\(\{ codecs \}\)/,
    );
  });

  it('the catalogue records each event’s codec, and a change of codec is a breaking change', () => {
    const config = (codec: 'json' | 'superjson') =>
      defineOutbox({
        events: {
          'shop.Rich': event({ schema: z.object({ n: z.number() }), codec }),
          'shop.Plain': event({ schema: z.object({ n: z.number() }) }),
        },
      });
    const before = buildCatalogue(config('json'));
    const after = buildCatalogue(config('superjson'));
    expect(after.events.map((e) => [e.name, e.codec])).toEqual([
      ['shop.Plain', 'json'],
      ['shop.Rich', 'superjson'],
    ]);
    const diff = diffCatalogues(before, after);
    // The body's shape changes with it: the payload's fields move under superjson's `json`.
    expect(diff.breaking.map((c) => [c.kind, c.event])).toEqual([
      ['event-codec-changed', 'shop.Rich'],
      ['field-added', 'shop.Rich'],
      ['field-removed', 'shop.Rich'],
    ]);
    expect(after.events[1].fields.map((f) => f.name)).toEqual(['json', 'json.n', 'meta']);
    // A catalogue written before codecs existed reads as json: no change for a json event.
    const old = {
      ...before,
      events: before.events.map(({ codec: _, ...e }) => e),
    } as unknown as typeof before;
    expect(diffCatalogues(old, before).breaking).toEqual([]);
  });

  it('a row naming a codec this outbox does not know is a PayloadDecodeError naming it', () => {
    const config = defineOutbox({ events: { 'a.A': event({ schema: z.object({}) }) } });
    const stored = {
      sequence: '1',
      uuid: '0190a000-0000-7000-8000-000000000000',
      name: 'a.A',
      version: 1,
      payload: '{}',
      headers: '{"outbox-codec":"msgpack"}',
    } as unknown as StoredEvent;
    expect(() => decodeEvent(config, stored)).toThrow(PayloadDecodeError);
    expect(() => decodeEvent(config, stored)).toThrow(
      /was written with codec "msgpack", which this outbox does not know \(it knows "json", "superjson"\)/,
    );
    expect(() =>
      decodeEvent(config, { ...stored, headers: '{"outbox-codec":"superjson"}' }),
    ).toThrow(/does not decode with its codec superjson/);
  });
});
