import { describe, expect, it } from 'vitest';
import { decodeJson, encodeJson } from '../../src/codec/json.js';
import { ValidationError } from '../../src/index.js';

/** The refusal `encodeJson` raises for a value (fails the test when there is none). */
function refusal(value: unknown, root = 'payload'): ValidationError {
  try {
    encodeJson(value, root);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error(`encodeJson accepted ${String(value)}`);
}

class Money {
  constructor(
    readonly amount: number,
    readonly currency: string,
  ) {}
}

const emoji = '😀';
const halfAnEmoji = `ok ${emoji}`.slice(0, 4); // 'ok ' and the high surrogate alone

describe('encodeJson refuses what JSON would change', () => {
  it('undefined inside an array (JSON would store null)', () => {
    const error = refusal({ items: [1, undefined, 3] });
    expect(error.path).toBe('payload.items[1]');
    expect(error.message).toMatchInlineSnapshot(
      `"payload.items[1] is undefined inside an array, which JSON would store as null; use null, or leave the element out; nothing was written"`,
    );
    // A hole is the same.
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point
    expect(refusal({ items: [1, , 3] }).path).toBe('payload.items[1]');
    // A function or symbol in an array would become null too.
    expect(refusal([() => 1]).path).toBe('payload[0]');
  });

  it('a class instance without toJSON (JSON would store a plain object)', () => {
    const error = refusal({ price: new Money(1250, 'EUR') });
    expect(error.path).toBe('payload.price');
    expect(error.message).toMatchInlineSnapshot(
      `"payload.price is an instance of Money without toJSON(), which JSON would store as a plain object of its fields (and decode as one); pass a plain object, or give Money a toJSON(); nothing was written"`,
    );
    expect(refusal({ samples: new Float32Array([1]) }).path).toBe('payload.samples');
    expect(refusal({ s: new Set([1]) }).message).toContain('payload.s is a Set');
    expect(refusal({ re: /x/ }).message).toContain('payload.re is an instance of RegExp');
  });

  it('an invalid Date (JSON would store null)', () => {
    const error = refusal({ at: [new Date('not a date')] });
    expect(error.path).toBe('payload.at[0]');
    expect(error.message).toMatchInlineSnapshot(
      `"payload.at[0] is an invalid Date, which JSON would store as null; nothing was written"`,
    );
  });

  it('a string holding an unpaired surrogate (half an emoji), in a value or a key', () => {
    const error = refusal({ title: halfAnEmoji });
    expect(error.path).toBe('payload.title');
    expect(error.message).toMatchInlineSnapshot(
      `"payload.title holds an unpaired UTF-16 surrogate (U+D83D at index 3) — half of a character, often an emoji cut by .slice(); PostgreSQL cannot store it. Cut text by code points (Array.from(text)) or drop the half; nothing was written"`,
    );
    expect(refusal({ tail: emoji.slice(1) }).message).toContain('U+DE00 at index 0');
    const inKey = refusal({ tags: { [halfAnEmoji]: 1 } });
    expect(inKey.path).toBe(`payload.tags[${JSON.stringify(halfAnEmoji)}]`);
    expect(inKey.message).toContain('in its name');
  });

  it('a NUL character, which jsonb cannot store, naming where', () => {
    expect(refusal({ a: { b: 'x\u0000y' } }).path).toBe('payload.a.b');
    expect(refusal({ 'k\u0000': 1 }).message).toContain(
      'contains a NUL character (\\u0000) in its name',
    );
  });

  it('a cycle, naming where it closes', () => {
    const node: Record<string, unknown> = { name: 'root' };
    node.children = [{ parent: node }];
    const error = refusal(node);
    expect(error.path).toBe('payload.children[0].parent');
    expect(error.message).toContain('(a cycle)');
  });

  it('NaN, Infinity, functions, and undefined itself', () => {
    expect(refusal({ r: Number.NaN }).message).toContain('payload.r is NaN');
    expect(refusal({ f: () => 1 }).message).toContain('payload.f is a function');
    expect(refusal(undefined).message).toContain('payload is undefined');
  });

  it('the same rules for headers, named as headers', () => {
    expect(refusal({ trace: [undefined] }, 'headers').path).toBe('headers.trace[0]');
    expect(refusal({ author: new Money(1, 'x') }, 'headers').path).toBe('headers.author');
  });

  it('a toJSON that throws, naming where', () => {
    const error = refusal({
      v: {
        toJSON: () => {
          throw new Error('boom');
        },
      },
    });
    expect(error.path).toBe('payload.v');
    expect(error.message).toContain('toJSON() threw (Error: boom)');
  });
});

describe('encodeJson keeps its documented encodings', () => {
  it('Date, bigint, Buffer, Uint8Array and toJSON as the table says; plain and null-prototype objects as they are', () => {
    const bare = Object.assign(Object.create(null), { k: 1 });
    const text = encodeJson({
      at: new Date('2026-05-06T07:08:09.000Z'),
      big: 12345678901234567890n,
      buffer: Buffer.from('hi'),
      bytes: new Uint8Array([104, 105]),
      price: { toJSON: () => '12.50' },
      bare,
      nested: [[{ ok: true }], null, 'ünï 😀'],
    });
    expect(decodeJson(text)).toEqual({
      at: '2026-05-06T07:08:09.000Z',
      big: '12345678901234567890',
      buffer: 'aGk=',
      bytes: 'aGk=',
      price: '12.50',
      bare: { k: 1 },
      nested: [[{ ok: true }], null, 'ünï 😀'],
    });
  });

  it('leaves out a property set to undefined, as an absent optional', () => {
    expect(encodeJson({ a: 1, b: undefined })).toBe('{"a":1}');
  });

  it('keeps text that merely looks like an escape', () => {
    const looks = { t: '\\u0000 and \\ud800' };
    expect(decodeJson(encodeJson(looks))).toEqual(looks);
  });
});
