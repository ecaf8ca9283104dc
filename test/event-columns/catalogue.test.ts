/** The catalogue lists the declared event columns, and its diff shows one added, removed or retyped. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { diffCatalogues } from '../../catalogue/diff.js';
import { defineOutbox, event } from '../../src/index.js';
import { buildCatalogue } from '../../src/introspect/index.js';

const events = { 'shop.Placed': event({ schema: z.object({ n: z.number() }) }) };
type Columns = Parameters<typeof defineOutbox>[0]['eventColumns'];
const catalogueOf = (eventColumns?: Columns) =>
  buildCatalogue(defineOutbox({ events, ...(eventColumns ? { eventColumns } : {}) }));

describe('event columns in the catalogue', () => {
  it('lists each declared column, sorted; a catalogue without any has no eventColumns key', () => {
    expect(
      catalogueOf({ region: { type: 'text' }, order_id: { type: 'bigint', index: true } })
        .eventColumns,
    ).toEqual([
      { name: 'order_id', type: 'bigint', index: true },
      { name: 'region', type: 'text', index: false },
    ]);
    expect('eventColumns' in catalogueOf()).toBe(false);
  });

  it('a column added is compatible; removed or retyped is breaking; an index change compatible', () => {
    const before = catalogueOf({ order_id: { type: 'bigint' }, region: { type: 'text' } });
    const after = catalogueOf({
      order_id: { type: 'text', index: true },
      paid: { type: 'boolean' },
    });
    const diff = diffCatalogues(before, after);
    expect(diff.breaking.map((c) => [c.kind, c.subject])).toEqual([
      ['column-type-changed', 'order_id'],
      ['column-removed', 'region'],
    ]);
    expect(diff.compatible.map((c) => [c.kind, c.subject])).toEqual([
      ['column-index-changed', 'order_id'],
      ['column-added', 'paid'],
    ]);
    expect(diffCatalogues(catalogueOf(), catalogueOf())).toEqual({ breaking: [], compatible: [] });
  });
});
