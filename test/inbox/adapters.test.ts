import { createHmac } from 'node:crypto';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  EVENT_ID_HEADER,
  fromKafka,
  fromRabbitmq,
  fromRedisStreams,
  fromWebhook,
  getBody,
  getHeaders,
  parseRedisStreamEntry,
  redisStreamFields,
  signBody,
  ValidationError,
  verifyWebhookSignature,
} from '../../src/index.js';
import { conformanceEvent } from '../../testing/conformance/index.js';

const e = conformanceEvent({ name: 'shop.OrderPlaced', orderingKey: 'o-1', payload: { n: 1 } });
const asBuffers = (h: Record<string, string>) =>
  Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Buffer.from(v)]));
const errorOf = (f: () => unknown): unknown => {
  try {
    f();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
};

describe('fromKafka', () => {
  it('reads the event id and topic from the headers kafkajs hands over as Buffers', () => {
    const message = {
      key: Buffer.from('o-1'),
      value: Buffer.from(getBody(e)),
      headers: asBuffers(getHeaders(e)),
    };
    expect(fromKafka(message)).toEqual({ id: e.id, topic: 'shop.OrderPlaced' });
  });

  it('reads text headers, a repeated header whose copies agree, and a header name in another case', () => {
    expect(fromKafka({ headers: { 'Outbox-Event-Id': e.id } })).toEqual({ id: e.id, topic: null });
    expect(fromKafka({ headers: { [EVENT_ID_HEADER]: [Buffer.from(e.id), e.id] } }).id).toBe(e.id);
  });

  it("takes kafkajs's own message type, with no kafkajs import", () => {
    // kafkajs 2.x's `KafkaMessage` (MessageSetEntry), as its types declare it.
    interface IHeaders {
      [key: string]: Buffer | string | (Buffer | string)[] | undefined;
    }
    interface KafkajsMessage {
      key: Buffer | null;
      value: Buffer | null;
      timestamp: string;
      attributes: number;
      offset: string;
      size: number;
      headers?: IHeaders;
    }
    expectTypeOf<KafkajsMessage>().toExtend<Parameters<typeof fromKafka>[0]>();
  });

  it('refuses a record without the event id header, naming the headers it has', () => {
    const error = errorOf(() =>
      fromKafka({ value: Buffer.from('{}'), headers: { 'x-trace': 'a' } }),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatchInlineSnapshot(
      `"fromKafka(message): the message has no event id (its headers: x-trace); outboxkit's transports send it as the outbox-event-id header, so this message was not sent by one, or its headers were dropped on the way. The inbox refuses it rather than process it with nothing to deduplicate on."`,
    );
    expect(errorOf(() => fromKafka({ value: null }))).toMatchObject({
      path: 'headers.outbox-event-id',
    });
  });

  it('refuses a repeated event id header with different values: which one is meant cannot be told', () => {
    expect(
      (errorOf(() => fromKafka({ headers: { [EVENT_ID_HEADER]: ['a', 'b'] } })) as Error).message,
    ).toMatch(/repeated with different values \("a", "b"\)/);
  });
});

describe('fromRabbitmq', () => {
  it('reads the outbox-event-id header, else the messageId property the transport also sets', () => {
    const properties = { messageId: e.id, type: e.name, headers: getHeaders(e) };
    expect(fromRabbitmq({ properties })).toEqual({ id: e.id, topic: 'shop.OrderPlaced' });
    expect(fromRabbitmq({ properties: { messageId: e.id, type: e.name, headers: {} } })).toEqual({
      id: e.id,
      topic: 'shop.OrderPlaced',
    });
    expect(fromRabbitmq({ properties: { messageId: 'other', headers: getHeaders(e) } }).id).toBe(
      e.id,
    );
  });

  it('refuses a message with neither', () => {
    expect(
      (errorOf(() => fromRabbitmq({ properties: { headers: undefined } })) as Error).message,
    ).toMatch(
      /^fromRabbitmq\(message\): the message has no event id \(no messageId property, and it has no headers\)/,
    );
  });
});

describe('fromRedisStreams', () => {
  const fields = redisStreamFields(e);
  it("reads the entry's id field — not the stream's own entry id — from any shape a consumer holds it in", () => {
    const want = { id: e.id, topic: 'shop.OrderPlaced' };
    expect(fromRedisStreams(fields)).toEqual(want);
    expect(fromRedisStreams(['1700000000000-0', fields])).toEqual(want);
    expect(fromRedisStreams(parseRedisStreamEntry(fields))).toEqual(want);
  });

  it('refuses an entry without an id field, naming the fields it has', () => {
    expect(
      (errorOf(() => fromRedisStreams(['payload', '{}', 'topic', 't'])) as Error).message,
    ).toMatch(/no "id" field; its fields: payload, topic/);
    expect(errorOf(() => fromRedisStreams(42 as never))).toBeInstanceOf(ValidationError);
  });
});

describe('fromWebhook and verifyWebhookSignature', () => {
  const secret = 'whsec-test';
  const body = Buffer.from(getBody(e));
  /** The signature computed here with node:crypto, independently of our signing code. */
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  const headers = {
    ...getHeaders(e),
    'content-type': 'application/json',
    'outbox-signature': signature,
  };

  it("verifies our webhook transport's signature over the raw body, in constant time", () => {
    expect(signBody(body, secret)).toBe(signature);
    expect(verifyWebhookSignature(body, signature, secret)).toBe(true);
    expect(verifyWebhookSignature(body.toString('utf8'), signature, Buffer.from(secret))).toBe(
      true,
    );
    expect(verifyWebhookSignature(body, [signature], secret)).toBe(true);
    expect(verifyWebhookSignature(body, signature, 'another secret')).toBe(false);
    expect(verifyWebhookSignature(Buffer.from(`${body} `), signature, secret)).toBe(false);
    expect(verifyWebhookSignature(body, 'sha256=00', secret)).toBe(false);
    expect(verifyWebhookSignature(body, undefined, secret)).toBe(false);
    expect(verifyWebhookSignature(body, [signature, signature], secret)).toBe(false);
  });

  it("reads the event id and topic from Node's headers and from a Fetch Headers", () => {
    expect(fromWebhook(headers, body)).toEqual({ id: e.id, topic: 'shop.OrderPlaced' });
    expect(fromWebhook(new Headers(headers))).toEqual({ id: e.id, topic: 'shop.OrderPlaced' });
  });

  it('with a secret, checks the signature first and refuses a request it does not match', () => {
    expect(fromWebhook(headers, body, { secret }).id).toBe(e.id);
    const forged = errorOf(() => fromWebhook(headers, Buffer.from('{"n":2}'), { secret }));
    expect(forged).toMatchObject({ path: 'headers.outbox-signature' });
    expect((forged as Error).message).toMatchInlineSnapshot(
      `"fromWebhook(headers, body): the outbox-signature header does not match the body; refused as not signed with the webhook's secret (check the secret, and that the body is the raw bytes, not re-serialised JSON)"`,
    );
    const { 'outbox-signature': _, ...unsigned } = headers;
    expect((errorOf(() => fromWebhook(unsigned, body, { secret })) as Error).message).toMatch(
      /has no outbox-signature header/,
    );
    expect(errorOf(() => fromWebhook(headers, undefined, { secret }))).toMatchObject({
      path: 'body',
    });
    // Another header name, as the transport's signatureHeader.
    const renamed = { ...unsigned, 'X-Signature': signature };
    expect(fromWebhook(renamed, body, { secret, signatureHeader: 'x-signature' }).id).toBe(e.id);
  });

  it('refuses a request without the event id header', () => {
    expect(errorOf(() => fromWebhook({ 'content-type': 'application/json' }))).toMatchObject({
      path: 'headers.outbox-event-id',
    });
    expect(errorOf(() => fromWebhook(new Headers()))).toBeInstanceOf(ValidationError);
  });
});
