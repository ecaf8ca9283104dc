import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  buildCatalogue,
  ConfigurationError,
  defineOutbox,
  encodeJsonValue,
  event,
  getBody,
  getHeaders,
  type OutboxEvent,
  type PayloadCodec,
  receiver,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { assertFired } from '../../testing/index.js';
import { freshPrefix, openOutbox, rowsOf } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

/**
 * A codec of the app's, written the way a user would: a `Date` is stored as
 * `{ "$date": <epoch ms> }` and a `bigint` as `{ "$bigint": "<decimal>" }`, so both come back
 * as themselves; the document is held to the JSON codec's refusals by `encodeJsonValue`.
 */
const tagged: PayloadCodec = {
  name: 'tagged',
  encode(payload, root) {
    return { text: encodeJsonValue(toTagged(payload), root).text, reshaped: true };
  },
  decode(stored) {
    return fromTagged(stored);
  },
};

function toTagged(value: unknown): unknown {
  if (value instanceof Date) return { $date: value.getTime() };
  if (typeof value === 'bigint') return { $bigint: value.toString() };
  if (Array.isArray(value)) return value.map(toTagged);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toTagged(v)]));
  }
  return value;
}

function fromTagged(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fromTagged);
  if (typeof value !== 'object' || value === null) return value;
  const record = value as Record<string, unknown>;
  if (typeof record.$date === 'number') return new Date(record.$date);
  if (typeof record.$bigint === 'string') return BigInt(record.$bigint);
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, fromTagged(v)]));
}

const Booked = z.object({
  at: z.date(),
  seats: z.bigint(),
  lines: z.array(z.object({ until: z.date() })),
});
const bookedPayload = () => ({
  at: new Date('2031-03-01T12:00:00.000Z'),
  seats: 90071992547409930n,
  lines: [{ until: new Date('2031-03-02T00:00:00.000Z') }],
});
const STORED = {
  at: { $date: Date.parse('2031-03-01T12:00:00.000Z') },
  seats: { $bigint: '90071992547409930' },
  lines: [{ until: { $date: Date.parse('2031-03-02T00:00:00.000Z') } }],
};

function bookedConfig(seen: OutboxEvent[], bodies: string[] = []) {
  const Event = event({ schema: Booked, codec: 'tagged' });
  return defineOutbox({
    codecs: [tagged],
    events: { 'venue.Booked': Event },
    receivers: {
      'audit.booked': receiver(Event, { handle: (e) => void seen.push(e) }),
      'hook.booked': receiver(Event, {
        deliver: async (e: OutboxEvent) => {
          bodies.push(getBody(e));
          bodies.push(getHeaders(e)['outbox-codec'] ?? '-');
        },
      }),
    },
  });
}

describeEachDialect(
  'payload codecs: a codec of the app’s (defineOutbox({ codecs }))',
  (dialect) => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await dialect.open();
    });
    afterAll(() => db.cleanup());

    it('fire → relay → a handler receives the values the codec brought back; the row holds its document', async () => {
      const seen: OutboxEvent[] = [];
      const outbox = await openOutbox(db, bookedConfig(seen));
      const fired = await outbox.fire('venue.Booked', bookedPayload());
      expect(fired.headers).toEqual({ 'outbox-codec': 'tagged' });
      // The event fire() answers with encodes as the row holds it, as a superjson one does.
      expect(JSON.parse(getBody(fired))).toEqual(STORED);
      const [row] = await runtimeOf(outbox).store.readEvents({});
      const stored = typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload;
      expect(stored).toEqual(STORED);
      const counts = await outbox.deliverPending();
      expect(counts.succeeded).toBe(2);
      expect((await rowsOf(outbox, 'audit.booked')).map((r) => r.status)).toEqual(['succeeded']);
      const payload = seen[0].payload as ReturnType<typeof bookedPayload>;
      expect(payload.at).toBeInstanceOf(Date);
      expect(payload).toEqual(bookedPayload());
      // assertFired reads through the same decoder, with the same codec.
      expect(await assertFired(outbox, 'venue.Booked', { times: 1 })).toEqual([bookedPayload()]);
      await outbox.close();
    });

    it('a transport receiver is sent the codec’s document as the body, and the header names the codec', async () => {
      const bodies: string[] = [];
      const outbox = await openOutbox(db, bookedConfig([], bodies));
      await outbox.fire('venue.Booked', bookedPayload());
      await outbox.deliverPending();
      expect(bodies).toHaveLength(2);
      expect(JSON.parse(bodies[0])).toEqual(STORED);
      expect(bodies[1]).toBe('tagged');
      // A repeat of an idempotency key answers with the stored event, read by the decoder.
      await outbox.fire('venue.Booked', bookedPayload(), { idempotencyKey: 'once' });
      const repeat = await outbox.fire('venue.Booked', bookedPayload(), { idempotencyKey: 'once' });
      expect(repeat.duplicate).toBe(true);
      expect(JSON.parse(getBody(repeat))).toEqual(STORED);
      await outbox.close();
    });

    it('a row whose codec this process does not know fails its delivery with a PayloadDecodeError naming it, never decoded as JSON', async () => {
      const tablePrefix = freshPrefix();
      const writer = await openOutbox(db, bookedConfig([]), { tablePrefix });
      await writer.fire('venue.Booked', bookedPayload());
      // Another process's config: the same event and receiver, no codec of the app's.
      const seen: OutboxEvent[] = [];
      const Loose = event({ schema: z.object({}).passthrough() });
      const reader = await openOutbox(
        db,
        defineOutbox({
          events: { 'venue.Booked': Loose },
          receivers: { 'audit.booked': receiver(Loose, { handle: (e) => void seen.push(e) }) },
        }),
        { tablePrefix },
      );
      const counts = await reader.deliverPending();
      expect(counts.succeeded).toBe(0);
      expect(seen).toEqual([]);
      const [row] = await rowsOf(reader, 'audit.booked');
      expect(row.status).toBe('failed');
      expect(row.lastError).toContain(
        'was written with codec "tagged", which this outbox does not know (it knows "json", "superjson"); declare that codec in defineOutbox({ codecs }) in every process that reads these events',
      );
      await Promise.all([writer.close(), reader.close()]);
    });
  },
);

describe('payload codecs of the app’s: declaring them', () => {
  const schema = z.object({ n: z.number() });

  it('settings.codec may name one, and the catalogue records its name', () => {
    const config = defineOutbox({
      codecs: [tagged],
      events: {
        'a.Tagged': event({ schema: Booked }),
        'a.Plain': event({ schema, codec: 'json' }),
      },
      settings: { codec: 'tagged' },
    });
    expect(config.eventList.map((e) => [e.name, e.codec])).toEqual([
      ['a.Plain', 'json'],
      ['a.Tagged', 'tagged'],
    ]);
    expect(config.codecs.get('tagged')).toBe(tagged);
    expect(buildCatalogue(config).events.map((e) => [e.name, e.codec])).toEqual([
      ['a.Plain', 'json'],
      ['a.Tagged', 'tagged'],
    ]);
  });

  it('a name clashing with json, superjson or another codec is a ConfigurationError naming it', () => {
    for (const name of ['json', 'superjson']) {
      expect(() => defineOutbox({ codecs: [{ ...tagged, name }], events: {} })).toThrow(
        `codecs[0].name is "${name}", the name of a built-in codec; name yours otherwise`,
      );
    }
    expect(() => defineOutbox({ codecs: [tagged, { ...tagged }], events: {} })).toThrow(
      'codecs[1].name is "tagged", which codecs[0] is named already; every codec needs a name of its own',
    );
    expect(() => defineOutbox({ codecs: [{ ...tagged, name: 'no spaces' }], events: {} })).toThrow(
      ConfigurationError,
    );
    expect(() =>
      defineOutbox({ codecs: [{ name: 'half', encode: tagged.encode } as never], events: {} }),
    ).toThrow(/codecs\[0\] must be a PayloadCodec/);
  });

  it('an event or settings.codec naming a codec the outbox does not have is refused, naming those it has', () => {
    expect(() =>
      defineOutbox({ events: { 'a.A': event({ schema, codec: 'taged' }) }, codecs: [tagged] }),
    ).toThrow(
      'events["a.A"].codec names the codec "taged", which this outbox does not have — did you mean "tagged"? (it has "json", "superjson", "tagged")',
    );
    expect(() => defineOutbox({ events: {}, settings: { codec: 'tagged' } })).toThrow(
      /settings\.codec names the codec "tagged", which this outbox does not have .*declare a codec of your own in defineOutbox\(\{ codecs: \[\.\.\.\] \}\)/,
    );
  });

  it('fire() refuses a payload the codec cannot read back into its schema, before anything is written', async () => {
    const lossy: PayloadCodec = {
      name: 'lossy',
      encode: (payload, root) => ({ text: encodeJsonValue(payload, root).text, reshaped: true }),
      decode: (stored) => stored,
    };
    const config = defineOutbox({
      codecs: [lossy],
      events: { 'a.A': event({ schema: z.object({ at: z.date() }), codec: 'lossy' }) },
    });
    const { prepareEvents } = await import('../../src/fire/prepare.js');
    expect(() =>
      prepareEvents(config, [{ name: 'a.A', payload: { at: new Date() } }], new Date(), 'fire()'),
    ).toThrow(
      /fire\(\): a\.A payload\.at would not decode once stored: as lossy stores it, it is refused by its schema/,
    );
  });

  it('getBody refuses an event naming a codec it was not decoded with, rather than sending JSON', () => {
    const made = {
      id: '0190a000-0000-7000-8000-000000000000',
      name: 'a.A',
      payload: {},
      headers: { 'outbox-codec': 'tagged' },
    } as unknown as OutboxEvent;
    expect(() => getBody(made)).toThrow(
      /getBody: event a\.A .* was written with the codec "tagged", which is no built-in codec, and no outbox declaring it \(defineOutbox\(\{ codecs \}\)\) fired or decoded this event/,
    );
  });
});
