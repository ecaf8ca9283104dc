import { describe, expect, it } from 'vitest';
import type { OutboxEvent } from '../../src/index.js';
import { EVENT_ID_HEADER, getBody, getHeaders, getKey, TOPIC_HEADER } from '../../src/index.js';

const event: OutboxEvent = {
  id: '0192f0c1-0000-7000-8000-000000000001',
  sequence: '7',
  name: 'shop.OrderPlaced',
  version: 1,
  payload: { orderId: 'o1', at: new Date('2031-01-01T00:00:00.000Z'), n: 3 },
  headers: { traceparent: '00-abc-def-01', tenant: { id: 4 }, [EVENT_ID_HEADER]: 'forged' },
  orderingKey: 'o1',
  idempotencyKey: null,
  occurredAt: new Date(0),
  recordedAt: new Date(0),
  actor: null,
  correlationId: null,
  causedBy: null,
};

describe('what every transport sends', () => {
  it('the body is the payload as the outbox stores it', () => {
    expect(getBody(event)).toBe('{"orderId":"o1","at":"2031-01-01T00:00:00.000Z","n":3}');
  });

  it("the headers are the event's own, as text, plus the event id and topic, which always win", () => {
    expect(getHeaders(event)).toEqual({
      traceparent: '00-abc-def-01',
      tenant: '{"id":4}',
      [EVENT_ID_HEADER]: event.id,
      [TOPIC_HEADER]: 'shop.OrderPlaced',
    });
  });

  it('the key is the ordering key', () => {
    expect(getKey(event)).toBe('o1');
    expect(getKey({ ...event, orderingKey: null })).toBeNull();
  });
});
