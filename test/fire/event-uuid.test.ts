import { validate, version } from 'uuid';
import { describe, expect, it } from 'vitest';
import { newEventUuid } from '../../src/fire/event-uuid.js';

describe('event ids', () => {
  it('are UUID version 7, unique, and sort in the order they were made', () => {
    const ids = Array.from({ length: 20_000 }, () => newEventUuid());
    for (const id of ids.slice(0, 100)) {
      expect(validate(id)).toBe(true);
      expect(version(id)).toBe(7);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('carry the time they were made in their first 48 bits', () => {
    const before = Date.now();
    const id = newEventUuid();
    const ms = Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    expect(ms).toBeGreaterThanOrEqual(before);
    expect(ms).toBeLessThanOrEqual(Date.now() + 1);
  });
});
