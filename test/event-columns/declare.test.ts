/** `defineOutbox({ eventColumns })`: what a declaration may say, and the errors naming the culprit. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigurationError, defineOutbox, event } from '../../src/index.js';

const events = { 'shop.Placed': event({ schema: z.object({ n: z.number() }) }) };
const declare = (eventColumns: unknown) =>
  defineOutbox({ events, eventColumns: eventColumns as never });

describe('eventColumns: the declaration', () => {
  it('resolves each column, sorted by name, index false unless asked; none by default', () => {
    const config = declare({ region: { type: 'text' }, order_id: { type: 'bigint', index: true } });
    expect(config.eventColumns).toEqual([
      { name: 'order_id', type: 'bigint', index: true },
      { name: 'region', type: 'text', index: false },
    ]);
    expect(defineOutbox({ events }).eventColumns).toEqual([]);
  });

  it('refuses a column named as one of the events table’s own, naming it', () => {
    expect(() => declare({ tenant: { type: 'text' } })).toThrow(ConfigurationError);
    expect(() => declare({ payload: { type: 'text' } })).toThrow(
      /eventColumns\.payload is a column of the outbox's own .*name the event column otherwise, e\.g\. "payload_ref"/,
    );
    // The row number the insert reads its JSON rows by, beside the declared columns.
    expect(() => declare({ ordinal: { type: 'integer' } })).toThrow(
      /eventColumns\.ordinal is a column/,
    );
  });

  it('refuses a name that is no plain lower-case identifier', () => {
    expect(() => declare({ 'order-id': { type: 'bigint' } })).toThrow(
      /is not a valid column name: lower-case letters, digits and _/,
    );
    expect(() => declare({ OrderId: { type: 'bigint' } })).toThrow(/is not a valid column name/);
  });

  it('refuses an unknown type and an unknown option, naming the column', () => {
    expect(() => declare({ order_id: { type: 'int8' } })).toThrow(
      /eventColumns\.order_id\.type must be one of "text", "integer", "bigint", "boolean", "uuid", "timestamp" \(got "int8"\)/,
    );
    expect(() => declare({ order_id: { type: 'bigint', indexed: true } })).toThrow(
      /eventColumns\.order_id has an unknown option "indexed" — did you mean "index"\?/,
    );
    expect(() => declare({ order_id: 'bigint' })).toThrow(/must be \{ type, index\? \}/);
  });
});
