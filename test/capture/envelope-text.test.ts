/**
 * `envelopeText` (src/capture/envelope.ts) stands in for the topic's zod parse and the
 * codec on capture's hot path: where it gives a text, zod must accept the envelope and the
 * codec must write exactly that text; where zod refuses, it must give none.
 */
import { DataTypes, Sequelize } from 'sequelize';
import { expect, it } from 'vitest';
import { changeOf, envelopeOf, envelopeText } from '../../src/capture/envelope.js';
import { encodeJsonValue } from '../../src/codec/json.js';
import { capture, defineOutbox } from '../../src/index.js';

const sequelize = new Sequelize({ dialect: 'sqlite', storage: ':memory:', logging: false });
const Thing = sequelize.define('Thing', {
  n: DataTypes.INTEGER,
  f: DataTypes.FLOAT,
  ok: DataTypes.BOOLEAN,
  price: DataTypes.DECIMAL(10, 2),
  at: DataTypes.DATE,
  name: DataTypes.STRING,
  data: DataTypes.JSON,
  bytes: DataTypes.BLOB,
});
const config = defineOutbox({
  events: {},
  capture: [capture(Thing, { app: 'x', payload: 'beforeAndAfter' })],
  receivers: {},
});
const resolved = config.captures[0]!;
const schema = config.route('x.thing.updated')!.event.schema;
const at = new Date('2026-01-02T03:04:05.678Z');

const base = {
  id: 7,
  n: 1,
  f: 1.5,
  ok: true,
  price: '2.50',
  at,
  name: 'a',
  data: null,
  bytes: null,
  createdAt: at,
  updatedAt: at,
};

function both(before: Record<string, unknown>, after: Record<string, unknown>) {
  const envelope = envelopeOf(
    resolved,
    changeOf(resolved, 'updated', { before, after, changed: ['n'] }, at),
  );
  const text = envelopeText(resolved, envelope);
  const parsed = schema.safeParse(envelope);
  return { envelope, text, parsed };
}

it.each([
  ['plain values', {}],
  ['nulls', { n: null, f: null, ok: null, price: null, at: null, name: null }],
  ['a float as NaN text', { f: Number.NaN }],
  ['a DECIMAL from SQLite as a number', { price: 3 }],
  ['a JSON attribute holding a primitive', { data: 'text' }],
  ['a buffer', { bytes: Buffer.from('hi') }],
  ['minus zero', { n: -0 }],
])('where it gives a text (%s), zod accepts and the codec writes the same', (_, change) => {
  const { text, parsed } = both(base, { ...base, ...change });
  expect(parsed.success).toBe(true);
  expect(text).toBeDefined();
  expect(text).toBe(encodeJsonValue(parsed.data).text);
});

it.each([
  ['an INTEGER holding text', { n: 'seven' }],
  ['a STRING holding a number', { name: 5 }],
  ['a BOOLEAN holding text', { ok: 'yes' }],
  ['an infinite INTEGER', { n: Number.POSITIVE_INFINITY }],
])('where zod refuses (%s), it gives none', (_, change) => {
  const { text, parsed } = both(base, { ...base, ...change });
  expect(parsed.success).toBe(false);
  expect(text).toBeUndefined();
});

it.each([
  ['a JSON attribute holding an object', { data: { a: [1, 2] } }],
  ['a lone surrogate', { name: '\ud800' }],
  ['a NUL', { name: 'a\u0000b' }],
  ['a control character', { name: 'a\u0001b' }],
])('what the codec must look at (%s) is left to it', (_, change) => {
  const { text } = both(base, { ...base, ...change });
  expect(text).toBeUndefined();
});
