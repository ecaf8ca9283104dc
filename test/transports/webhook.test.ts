import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { DeliveryItem, DeliveryResult, OutboxEvent } from '../../src/declare/types.js';
import {
  ConfigurationError,
  DeliveryError,
  defineOutbox,
  event,
  getBody,
  isPublicAddress,
  isPublicUrl,
  PermanentFailure,
  RetryAfter,
  receiver,
  type WebhookLookup,
  type WebhookOptions,
  type WebhookResult,
  webhook,
} from '../../src/index.js';
import { undiciNotInstalled } from '../../src/transports/webhook/load-undici.js';
import { retryAfterSeconds } from '../../src/transports/webhook/retry-after.js';
import {
  conformanceEvent,
  conformanceItems,
  transportConformance,
} from '../../testing/conformance/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/index.js';
import { captureLogger, openOutbox, rowsOf, testClock } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  type ReceivedRequest,
  signatureValid,
  startWebhookServer,
  type WebhookServer,
} from './support/webhook-server.js';

const SECRET = 'whsec_test_9f8e7d6c5b4a';
/** The test server is on loopback: a guard lenient for exactly 127.0.0.1, nothing else. */
const onlyLoopbackTestServer = { allowsAddress: (address: string) => address === '127.0.0.1' };
const never = new AbortController().signal;

function send(transport: ReturnType<typeof webhook>, events: OutboxEvent[], signal = never) {
  return transport.deliverBatch(conformanceItems(events, signal), { signal });
}

/** A lookup of our own: these names resolve where the test says, everything else fails. */
function hosts(table: Record<string, string[]>): WebhookLookup {
  return async (hostname) => {
    const addresses = table[hostname];
    if (!addresses)
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

function errorOf(result: DeliveryResult): unknown {
  expect(result.status).not.toBe('sent');
  return result.status === 'sent' ? undefined : result.error;
}

transportConformance('webhook (a real HTTP server on 127.0.0.1)', async ({ runId }) => {
  const server = await startWebhookServer();
  const transport = webhook({
    url: `${server.url}/${runId}`,
    secret: SECRET,
    ...onlyLoopbackTestServer,
  });
  return {
    transport,
    received: async () => server.received(),
    failDestination: async () => {
      server.mode = 'down';
    },
    restoreDestination: async () => {
      server.mode = 'up';
    },
    failEvents: async (ids) => {
      for (const id of ids) server.refused.add(id);
    },
    stallDestination: async () => {
      server.mode = 'stalled';
    },
    cleanup: () => server.close(),
  };
});

describe('webhook: what is sent', () => {
  let server: WebhookServer;
  beforeAll(async () => {
    server = await startWebhookServer();
  });
  afterAll(() => server.close());

  it('POSTs the exact body as application/json, signed sha256=<HMAC-SHA256 of the body> in outbox-signature', async () => {
    const transport = webhook({ url: server.url, secret: SECRET, ...onlyLoopbackTestServer });
    const e = conformanceEvent({ payload: { note: 'Zoë ✓ 😀', n: 1 }, orderingKey: 'order-1' });
    expect(await send(transport, [e])).toEqual([{ status: 'sent' }]);
    const request = server.requests.find((r) => r.headers['outbox-event-id'] === e.id)!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/hooks');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.body.equals(Buffer.from(getBody(e), 'utf8'))).toBe(true);
    expect(signatureValid(request, SECRET, 'outbox-signature')).toBe(true);
    expect(signatureValid(request, 'another secret', 'outbox-signature')).toBe(false);
    expect(request.headers['outbox-topic']).toBe(e.name);
    expect(request.headers['outbox-ordering-key']).toBe('order-1');
    await transport.close();
  });

  it('puts the signature in signatureHeader, and sends unsigned without a secret', async () => {
    const named = webhook({
      url: server.url,
      secret: SECRET,
      signatureHeader: 'X-Webhook-Signature',
      ...onlyLoopbackTestServer,
    });
    const unsigned = webhook({ url: server.url, ...onlyLoopbackTestServer });
    const [a, b] = [conformanceEvent(), conformanceEvent()];
    await send(named, [a]);
    await send(unsigned, [b]);
    const byId = (id: string) => server.requests.find((r) => r.headers['outbox-event-id'] === id)!;
    expect(signatureValid(byId(a.id), SECRET, 'x-webhook-signature')).toBe(true);
    expect(byId(a.id).headers['outbox-signature']).toBeUndefined();
    expect(byId(b.id).headers['outbox-signature']).toBeUndefined();
    await named.close();
    await unsigned.close();
  });

  it("layers headers: the webhook's, then the target's, then the event's own; content-type and the signature always the webhook's", async () => {
    const transport = webhook({
      target: () => ({
        url: server.url,
        secret: SECRET,
        headers: { 'x-layer': 'target', 'x-target-only': 't', 'content-type': 'text/plain' },
      }),
      headers: {
        'x-layer': 'webhook',
        'x-webhook-only': 'w',
        'x-trace': 'webhook',
        'outbox-signature': 'forged',
      },
      ...onlyLoopbackTestServer,
    });
    const e = conformanceEvent({ headers: { 'x-trace': 'event', 'x-author': 'Zoë ✓' } });
    await send(transport, [e]);
    const request = server.requests.find((r) => r.headers['outbox-event-id'] === e.id)!;
    expect(request.headers).toMatchObject({
      'x-layer': 'target',
      'x-target-only': 't',
      'x-webhook-only': 'w',
      'x-trace': 'event',
      'x-author': 'Zoë ✓',
      'content-type': 'application/json',
    });
    expect(signatureValid(request, SECRET, 'outbox-signature')).toBe(true);
    await transport.close();
  });

  it("target(event, context) gives each subscriber's url, secret and headers; context.target is the fan-out target", async () => {
    const subscriptions: Record<string, { path: string; secret: string }> = {
      acme: { path: '/acme', secret: 'whsec_acme' },
      globex: { path: '/globex', secret: 'whsec_globex' },
    };
    const transport = webhook({
      target: async (_e, { target }) => ({
        url: `${server.url}${subscriptions[target].path}`,
        secret: subscriptions[target].secret,
        headers: { 'x-subscription': target },
      }),
      ...onlyLoopbackTestServer,
    });
    const e = conformanceEvent();
    const items: DeliveryItem[] = ['acme', 'globex'].map((target, i) => ({
      event: e,
      context: { receiverKey: 'hooks', deliveryId: String(i), attempt: 1, target, dueAt: null },
    }));
    expect(await transport.deliverBatch(items, { signal: never })).toEqual([
      { status: 'sent' },
      { status: 'sent' },
    ]);
    for (const target of ['acme', 'globex']) {
      const request = server.requests.find((r) => r.headers['x-subscription'] === target)!;
      expect(request.path).toBe(`/hooks${subscriptions[target].path}`);
      expect(signatureValid(request, subscriptions[target].secret, 'outbox-signature')).toBe(true);
    }
    await transport.close();
  });

  it('sends the batch with a small concurrency, one ordering key after the other in item order', async () => {
    let inFlight = 0;
    let most = 0;
    const order: string[] = [];
    server.respond = (request, response) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      setTimeout(() => {
        inFlight -= 1;
        order.push(request.headers['outbox-event-id']);
        response.writeHead(200).end();
      }, 15);
      return 'hang';
    };
    try {
      const transport = webhook({ url: server.url, concurrency: 3, ...onlyLoopbackTestServer });
      const keys = ['a', 'b', 'a', 'c', 'd', 'a', 'e', 'f'];
      const events = keys.map((orderingKey) => conformanceEvent({ orderingKey }));
      const results = await send(transport, events);
      expect(results.every((r) => r.status === 'sent')).toBe(true);
      expect(most).toBe(3);
      const ofA = events.filter((e) => e.orderingKey === 'a').map((e) => e.id);
      expect(order.filter((id) => ofA.includes(id))).toEqual(ofA);
      await transport.close();
    } finally {
      server.respond = undefined;
    }
  });

  it('does not send the later events of a key once one failed in the batch (they would overtake it)', async () => {
    const transport = webhook({ url: server.url, ...onlyLoopbackTestServer });
    const [first, second, other] = [
      conformanceEvent({ orderingKey: 'k' }),
      conformanceEvent({ orderingKey: 'k' }),
      conformanceEvent({ orderingKey: 'other' }),
    ];
    server.refused.add(first.id);
    const results = await send(transport, [first, second, other]);
    expect(results.map((r) => r.status)).toEqual(['failed', 'failed', 'sent']);
    expect(server.requests.some((r) => r.headers['outbox-event-id'] === second.id)).toBe(false);
    await transport.close();
  });
});

describe('webhook: a fan-out target fails alone', () => {
  let server: WebhookServer;
  beforeAll(async () => {
    server = await startWebhookServer();
    // The warehouse endpoint is down; every other path answers 200.
    server.respond = (request) =>
      request.path.endsWith('/warehouse') ? { status: 500, body: 'down' } : undefined;
  });
  afterAll(() => server.close());

  const byTarget = () =>
    webhook({
      target: (_e, { target }) => ({ url: `${server.url}/${target}` }),
      ...onlyLoopbackTestServer,
    });
  const itemOf = (event: OutboxEvent, target: string, receiverKey = 'hooks'): DeliveryItem => ({
    event,
    context: { receiverKey, deliveryId: `${target}-${event.id}`, attempt: 1, target, dueAt: null },
  });

  it('a failing target does not hold back a sibling target of the same event: the order is per (receiver, target, ordering key)', async () => {
    const transport = byTarget();
    const first = conformanceEvent({ orderingKey: 'f-1' });
    const second = conformanceEvent({ orderingKey: 'f-1' });
    const results = await transport.deliverBatch(
      [
        itemOf(first, 'warehouse'),
        itemOf(first, 'crm'),
        itemOf(second, 'warehouse'),
        itemOf(second, 'crm'),
        itemOf(second, 'warehouse', 'hooks.other'),
      ],
      { signal: never },
    );
    expect(results.map((r) => r.status)).toEqual(['failed', 'sent', 'failed', 'sent', 'failed']);
    // crm got both events, in order; the warehouse was asked for the first event only (the
    // second would overtake it), and the other receiver's warehouse row went on its own.
    const crm = server.requests.filter((r) => r.path === '/hooks/crm');
    expect(crm.map((r) => r.headers['outbox-event-id'])).toEqual([first.id, second.id]);
    expect(errorOf(results[2])).toMatchObject({
      message:
        'not sent: an earlier event of ordering key f-1 for target warehouse failed in this batch',
    });
    expect(String(errorOf(results[4]))).toMatch(/answered 500/);
    await transport.close();
  });
});

describe('webhook: a stop mid-batch', () => {
  it("ends the request in hand and the held-back events of its key with the stop's reason (so the relay hands them back)", async () => {
    const server = await startWebhookServer();
    server.mode = 'stalled';
    const transport = webhook({ url: server.url, ...onlyLoopbackTestServer });
    const controller = new AbortController();
    const reason = new Error('the relay is stopping');
    const pending = send(
      transport,
      [conformanceEvent({ orderingKey: 'k' }), conformanceEvent({ orderingKey: 'k' })],
      controller.signal,
    );
    setTimeout(() => controller.abort(reason), 20);
    expect(await pending).toEqual([
      { status: 'failed', error: reason },
      { status: 'failed', error: reason },
    ]);
    await transport.close();
    await server.close();
  });
});

describe('webhook: answers', () => {
  let server: WebhookServer;
  beforeAll(async () => {
    server = await startWebhookServer();
  });
  afterAll(() => server.close());
  const answer = (status: number, headers?: Record<string, string>, body?: string) => {
    server.respond = () => ({ status, headers, body });
  };

  it('any status but 2xx fails the event with a DeliveryError naming the status', async () => {
    const transport = webhook({ url: server.url, ...onlyLoopbackTestServer });
    for (const status of [400, 401, 404, 500, 502]) {
      answer(status);
      const [result] = await send(transport, [conformanceEvent()]);
      const error = errorOf(result);
      expect(result.status).toBe('failed');
      expect(error).toBeInstanceOf(DeliveryError);
      expect((error as Error).message).toBe(
        `webhook to http://127.0.0.1:${server.port} answered ${status}`,
      );
    }
    answer(204);
    expect(await send(transport, [conformanceEvent()])).toEqual([{ status: 'sent' }]);
    server.respond = undefined;
    await transport.close();
  });

  it('a 410 Gone is a PermanentFailure', async () => {
    const transport = webhook({ url: server.url, ...onlyLoopbackTestServer });
    answer(410);
    const [result] = await send(transport, [conformanceEvent()]);
    expect(errorOf(result)).toBeInstanceOf(PermanentFailure);
    await expect(
      transport.deliver(conformanceEvent(), conformanceItems([conformanceEvent()])[0].context),
    ).rejects.toBeInstanceOf(PermanentFailure);
    server.respond = undefined;
    await transport.close();
  });

  it('a 429 or 503 with Retry-After (seconds or an HTTP date) asks for the retry then', async () => {
    const now = new Date('2031-03-01T12:00:00.000Z');
    const transport = webhook({ url: server.url, now: () => now, ...onlyLoopbackTestServer });
    answer(429, { 'retry-after': '120' });
    expect(await send(transport, [conformanceEvent()])).toMatchObject([
      { status: 'retryAfter', seconds: 120 },
    ]);
    answer(503, { 'retry-after': 'Sat, 01 Mar 2031 12:05:00 GMT' });
    expect(await send(transport, [conformanceEvent()])).toMatchObject([
      { status: 'retryAfter', seconds: 300 },
    ]);
    answer(429, { 'retry-after': '7' });
    const e = conformanceEvent();
    const thrown = await transport
      .deliver(e, conformanceItems([e])[0].context)
      .catch((x: unknown) => x);
    expect(thrown).toBeInstanceOf(RetryAfter);
    expect((thrown as RetryAfter).seconds).toBe(7);
    answer(429);
    expect(await send(transport, [conformanceEvent()])).toMatchObject([{ status: 'failed' }]);
    server.respond = undefined;
    await transport.close();
  });

  it('reads Retry-After as delta-seconds or an HTTP date, never below zero', () => {
    const now = new Date('2031-03-01T12:00:00.000Z');
    expect(retryAfterSeconds('0', now)).toBe(0);
    expect(retryAfterSeconds(' 45 ', now)).toBe(45);
    expect(retryAfterSeconds('Sat, 01 Mar 2031 12:00:30 GMT', now)).toBe(30);
    expect(retryAfterSeconds('Sat, 01 Mar 2031 11:00:00 GMT', now)).toBe(0);
    expect(retryAfterSeconds('soon', now)).toBeUndefined();
    expect(retryAfterSeconds(undefined, now)).toBeUndefined();
  });

  it('never follows a redirect: a 3xx fails, and its Location is never requested', async () => {
    const elsewhere = await startWebhookServer();
    try {
      const transport = webhook({ url: server.url, allowsAddress: () => true });
      answer(302, { location: elsewhere.url });
      const [result] = await send(transport, [conformanceEvent()]);
      expect((errorOf(result) as Error).message).toMatch(
        /answered 302, a redirect, which is never followed/,
      );
      expect(elsewhere.requests).toEqual([]);
      await transport.close();
    } finally {
      server.respond = undefined;
      await elsewhere.close();
    }
  });

  it('timeoutMs aborts a request without an answer', async () => {
    server.respond = () => 'hang';
    const transport = webhook({ url: server.url, timeoutMs: 100, ...onlyLoopbackTestServer });
    const started = Date.now();
    const [result] = await send(transport, [conformanceEvent()]);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect((errorOf(result) as Error).message).toBe(
      `webhook to http://127.0.0.1:${server.port}: no answer within timeoutMs (100 ms)`,
    );
    server.respond = undefined;
    await transport.close();
  });

  it('onResult records each attempt: status, body and error cut to 4000 characters, NUL as U+FFFD', async () => {
    const results: WebhookResult[] = [];
    const transport = webhook({
      url: server.url,
      onResult: (r) => void results.push(r),
      ...onlyLoopbackTestServer,
    });
    answer(200, {}, 'ok\u0000done');
    await send(transport, [conformanceEvent()]);
    answer(500, {}, 'x'.repeat(10_000));
    await send(transport, [conformanceEvent()]);
    server.respond = () => 'hang';
    const controller = new AbortController();
    const pending = send(transport, [conformanceEvent()], controller.signal);
    setTimeout(() => controller.abort(new Error('the relay is stopping')), 20);
    await pending;
    expect(results[0]).toEqual({ statusCode: 200, body: 'ok\uFFFDdone', error: null });
    expect(results[1].statusCode).toBe(500);
    expect(results[1].body).toHaveLength(4000);
    expect(results[1].error).toBe(`webhook to http://127.0.0.1:${server.port} answered 500`);
    expect(results[2]).toEqual({ statusCode: null, body: null, error: 'the relay is stopping' });
    server.respond = undefined;
    await transport.close();
  });
});

describe('webhook: requests into our own network are refused', () => {
  let server: WebhookServer;
  beforeAll(async () => {
    server = await startWebhookServer();
  });
  afterAll(() => server.close());

  /** Send one event with the default guard (plus `options`) and return its refusal message. */
  async function refusal(url: string, options: Partial<WebhookOptions> = {}): Promise<string> {
    const transport = webhook({ url, secret: SECRET, ...options } as WebhookOptions);
    const started = Date.now();
    try {
      const [result] = await send(transport, [conformanceEvent()]);
      expect(result.status).toBe('failed');
      // refused before connecting: no connect timeout to an unroutable address
      expect(Date.now() - started).toBeLessThan(1_000);
      return (errorOf(result) as Error).message;
    } finally {
      await transport.close();
    }
  }

  it('refuses 127.0.0.1 (a live server there gets nothing)', async () => {
    expect(await refusal(server.url)).toBe(
      `webhook to http://127.0.0.1:${server.port} refused: 127.0.0.1 was refused by allowsAddress (127.0.0.1 is a loopback address)`,
    );
    expect(server.requests).toEqual([]);
  });

  it('refuses 10.0.0.1 and 169.254.169.254 (the cloud metadata endpoint)', async () => {
    expect(await refusal('http://10.0.0.1/hooks')).toMatch(
      /10\.0\.0\.1 is a private \(RFC 1918\) address/,
    );
    expect(await refusal('http://169.254.169.254/latest/meta-data/')).toMatch(
      /169\.254\.169\.254 is a link-local \(cloud metadata\) address/,
    );
  });

  it('refuses [::1] (a live server there gets nothing)', async () => {
    let v6: WebhookServer | undefined;
    try {
      v6 = await startWebhookServer('::1');
    } catch {
      // no IPv6 loopback on this machine: the refusal is still checked, without a listener
    }
    expect(await refusal(v6?.url ?? 'http://[::1]:8080/hooks')).toMatch(
      /::1 is a unspecified, loopback or IPv4-compatible address/,
    );
    expect(v6?.requests ?? []).toEqual([]);
    await v6?.close();
  });

  it('refuses a name that resolves to a private address, checked after DNS resolution', async () => {
    const lookup = hosts({
      'hooks.example.test': ['127.0.0.1'],
      'db.example.test': ['93.184.216.34', '10.1.2.3'],
    });
    expect(await refusal(`http://hooks.example.test:${server.port}/hooks`, { lookup })).toMatch(
      /the name hooks\.example\.test resolved to 127\.0\.0\.1, which allowsAddress refused \(127\.0\.0\.1 is a loopback address\)/,
    );
    // one private address among public ones refuses the name
    expect(await refusal(`http://db.example.test:${server.port}/hooks`, { lookup })).toMatch(
      /10\.1\.2\.3/,
    );
    expect(server.requests).toEqual([]);
  });

  it('refuses localhost through the system resolver, and cloud metadata names before any lookup', async () => {
    expect(await refusal(`http://localhost:${server.port}/hooks`)).toMatch(
      /the name localhost is refused/,
    );
    expect(await refusal('http://metadata.google.internal/computeMetadata/v1/')).toMatch(
      /the name metadata\.google\.internal is refused/,
    );
    expect(server.requests).toEqual([]);
  });

  it('refuses a 302 to a private address (redirects are never followed)', async () => {
    const inside = await startWebhookServer();
    const outside = await startWebhookServer();
    outside.respond = () => ({ status: 302, headers: { location: inside.url } });
    // outside stands for a public endpoint: the guard lets only its port through
    const transport = webhook({
      url: outside.url,
      allowsAddress: () => true,
      allowsUrl: (u) => new URL(u).port === String(outside.port),
    });
    const [result] = await send(transport, [conformanceEvent()]);
    expect((errorOf(result) as Error).message).toMatch(/answered 302/);
    expect(inside.requests).toEqual([]);
    await transport.close();
    await inside.close();
    await outside.close();
  });

  it('connects to exactly the address it checked: a name rebinding to loopback after isPublicUrl said yes is refused', async () => {
    let calls = 0;
    // the first answer is public, every later one loopback (DNS rebinding)
    const lookup: WebhookLookup = async () => [
      { address: calls++ === 0 ? '93.184.216.34' : '127.0.0.1', family: 4 },
    ];
    const message = await refusal(`http://rebind.example.test:${server.port}/hooks`, {
      lookup,
      allowsUrl: (u) => isPublicUrl(u, { lookup }),
    });
    expect(message).toMatch(/resolved to 127\.0\.0\.1, which allowsAddress refused/);
    expect(calls).toBe(2);
    expect(server.requests).toEqual([]);
  });

  it('a name the guard allows is connected to at the address checked (the pinned lookup)', async () => {
    const transport = webhook({
      url: `http://hooks.example.test:${server.port}/hooks`,
      lookup: hosts({ 'hooks.example.test': ['127.0.0.1'] }),
      ...onlyLoopbackTestServer,
    });
    const e = conformanceEvent();
    expect(await send(transport, [e])).toEqual([{ status: 'sent' }]);
    const request = server.requests.find((r) => r.headers['outbox-event-id'] === e.id)!;
    expect(request.headers.host).toBe(`hooks.example.test:${server.port}`);
    await transport.close();
  });

  it('allowsUrl is asked before every request; a refusal fails the event unsent', async () => {
    const asked: string[] = [];
    const transport = webhook({
      url: `${server.url}?tenant=1`,
      allowsUrl: async (u) => {
        asked.push(u);
        return false;
      },
      ...onlyLoopbackTestServer,
    });
    const before = server.requests.length;
    const results = await send(transport, [conformanceEvent(), conformanceEvent()]);
    expect(
      results.map((r) => (r.status === 'failed' ? (r.error as Error).message : r.status)),
    ).toEqual([
      `webhook to http://127.0.0.1:${server.port} refused by allowsUrl`,
      `webhook to http://127.0.0.1:${server.port} refused by allowsUrl`,
    ]);
    expect(asked).toEqual([`${server.url}?tenant=1`, `${server.url}?tenant=1`]);
    expect(server.requests.length).toBe(before);
    await transport.close();
  });

  it('isPublicAddress refuses every special-purpose range and takes public addresses', () => {
    const refused = [
      '127.0.0.1',
      '127.255.255.254',
      '10.0.0.1',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '100.127.255.255',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      'fc00::1',
      'fd12:3456::1',
      'fe80::1',
      'fe80::1%eth0',
      '[::1]',
      '64:ff9b::a00:1',
      'ff02::1',
      'not an address',
      '',
    ];
    const allowed = [
      '93.184.216.34',
      '8.8.8.8',
      '172.32.0.1',
      '100.128.0.1',
      '2606:4700:4700::1111',
      '[2a00:1450:4001::200e]',
    ];
    expect(refused.filter((a) => isPublicAddress(a))).toEqual([]);
    expect(allowed.filter((a) => !isPublicAddress(a))).toEqual([]);
    expect(isPublicAddress('93.184.216.34', 'metadata.google.internal')).toBe(false);
  });

  it('isPublicUrl checks the scheme, the name and every resolved address', async () => {
    const lookup = hosts({
      'public.example.test': ['93.184.216.34'],
      'private.example.test': ['192.168.0.10'],
    });
    expect(await isPublicUrl('https://public.example.test/hooks', { lookup })).toBe(true);
    expect(await isPublicUrl('https://private.example.test/hooks', { lookup })).toBe(false);
    expect(await isPublicUrl('https://unknown.example.test/hooks', { lookup })).toBe(false);
    expect(await isPublicUrl('http://0x7f.1/', { lookup })).toBe(false); // 127.0.0.1 spelt otherwise
    expect(await isPublicUrl('http://[::ffff:127.0.0.1]/', { lookup })).toBe(false);
    expect(await isPublicUrl('http://93.184.216.34/', { lookup })).toBe(true);
    expect(await isPublicUrl('file:///etc/passwd', { lookup })).toBe(false);
    expect(await isPublicUrl('http://LOCALHOST./', { lookup })).toBe(false);
    expect(await isPublicUrl('not a url')).toBe(false);
  });
});

describe('webhook: options', () => {
  it('refuses neither or both of url and target, a secret beside target, and bad numbers', () => {
    expect(() => webhook({} as WebhookOptions)).toThrow(
      /needs exactly one of url .* and target .*got neither/,
    );
    expect(() =>
      webhook({ url: 'https://a.example', target: () => ({ url: 'https://b.example' }) } as never),
    ).toThrow(/got both/);
    expect(() =>
      webhook({ target: () => ({ url: 'https://b.example' }), secret: 's' } as never),
    ).toThrow(/with target, the secret is the target's/);
    expect(() => webhook({ url: 'ftp://a.example' })).toThrow(/only http: and https:/);
    expect(() => webhook({ url: 'https://a.example', timeoutMs: 0 })).toThrow(
      /timeoutMs }\) must be/,
    );
    expect(() => webhook({ url: 'https://a.example', concurrency: 0 })).toThrow(
      /concurrency }\) must be/,
    );
    expect(() => webhook({ url: 'https://a.example', signatureHeader: 'bad header' })).toThrow(
      /signatureHeader/,
    );
    expect(() => webhook({} as WebhookOptions)).toThrow(ConfigurationError);
  });

  it("undici is loaded lazily: only load-undici.ts imports it, and only with import() (so `import 'outboxkit'` loads no HTTP client)", () => {
    const files = (readdirSync('src', { recursive: true }) as string[]).filter((f) =>
      f.endsWith('.ts'),
    );
    const importing = files.filter((f) =>
      /from\s+['"]undici['"]|import\(\s*['"]undici['"]\s*\)/.test(
        readFileSync(join('src', f), 'utf8')
          .replace(/import type[^;]*;/g, '')
          .replace(/typeof import\('undici'\)/g, ''),
      ),
    );
    expect(importing).toEqual([join('transports', 'webhook', 'load-undici.ts')]);
    expect(readFileSync('src/transports/webhook/load-undici.ts', 'utf8')).toMatch(
      /await import\('undici'\)|import\('undici'\)\.catch/,
    );
  });

  it('a missing undici says to npm install it', () => {
    const missing = Object.assign(
      new Error("Cannot find package 'undici' imported from /app/x.js"),
      {
        code: 'ERR_MODULE_NOT_FOUND',
      },
    );
    const hint = undiciNotInstalled(missing) as Error;
    expect(hint).toBeInstanceOf(ConfigurationError);
    expect(hint.message).toBe(
      'webhook() needs the undici package, which is not installed: run `npm install undici`',
    );
    const other = new Error('boom');
    expect(undiciNotInstalled(other)).toBe(other);
  });
});

describeEachDialect('webhook through a real outbox', (dialect) => {
  let db: TestDatabase;
  let server: WebhookServer;
  beforeAll(async () => {
    db = await dialect.open();
    server = await startWebhookServer();
  });
  afterAll(async () => {
    await server.close();
    await db.cleanup();
  });

  const Notified = event({ schema: z.object({ to: z.string(), n: z.number() }) });
  const TOKEN = 'Bearer tok_live_abcdef123456';

  function configOf(options: Partial<WebhookOptions> = {}, maxAttempts = 3) {
    const transport = webhook({
      url: `${server.url}/t0k3n-in-path`,
      secret: SECRET,
      headers: { authorization: TOKEN },
      ...onlyLoopbackTestServer,
      ...options,
    } as WebhookOptions);
    return defineOutbox({
      events: { 'notify.Sent': Notified },
      receivers: { 'hooks.notify': receiver('notify.*', { deliver: transport, maxAttempts }) },
    });
  }

  it('delivers fired events as signed requests, and records them succeeded', async () => {
    const outbox = await openOutbox(db, configOf());
    const first = await outbox.fire('notify.Sent', { to: 'ada', n: 1 }, { orderingKey: 'ada' });
    await outbox.fire('notify.Sent', { to: 'ada', n: 2 }, { orderingKey: 'ada' });
    expect((await drainOutbox(outbox)).succeeded).toBe(2);
    const mine = server.requests.filter(
      (r) => r.headers['outbox-topic'] === 'notify.Sent' && r.path.includes('t0k3n'),
    );
    const ids = mine.map((r) => r.headers['outbox-event-id']);
    expect(ids).toContain(first.id);
    const request = mine.find((r) => r.headers['outbox-event-id'] === first.id) as ReceivedRequest;
    expect(JSON.parse(request.body.toString('utf8'))).toEqual({ to: 'ada', n: 1 });
    expect(signatureValid(request, SECRET, 'outbox-signature')).toBe(true);
    expect(request.headers.authorization).toBe(TOKEN);
    expect((await rowsOf(outbox, 'hooks.notify')).map((r) => r.status)).toEqual([
      'succeeded',
      'succeeded',
    ]);
    await outbox.close();
  });

  it('a fan-out target that keeps failing dead-letters alone; its sibling target is sent and succeeds', async () => {
    const config = defineOutbox({
      events: { 'notify.Sent': Notified },
      receivers: {
        'hooks.fanout': receiver(Notified, {
          targets: () => ['warehouse', 'crm'],
          deliver: webhook({
            target: (_e, { target }) => ({ url: `${server.url}/fanout/${target}` }),
            ...onlyLoopbackTestServer,
          }),
          maxAttempts: 3,
        }),
      },
    });
    const outbox = await openOutbox(db, config);
    server.respond = (request) =>
      request.path === '/hooks/fanout/warehouse' ? { status: 500, body: 'down' } : undefined;
    try {
      const fired = await outbox.fire('notify.Sent', { to: 'f', n: 1 }, { orderingKey: 'f-1' });
      expect(await drainOutbox(outbox)).toMatchObject({ succeeded: 1, dead: 1 });
      const rows = await rowsOf(outbox, 'hooks.fanout');
      expect(rows.map((r) => [r.target, r.status, r.attempts])).toEqual([
        ['warehouse', 'dead', 3],
        ['crm', 'succeeded', 1],
      ]);
      expect(rows[0].lastError).toMatch(/answered 500/);
      const crm = server.requests.filter((r) => r.path === '/hooks/fanout/crm');
      expect(crm.map((r) => r.headers['outbox-event-id'])).toEqual([fired.id]);
    } finally {
      server.respond = undefined;
      await outbox.close();
    }
  });

  it('a 410 dead-letters the delivery at once', async () => {
    const outbox = await openOutbox(db, configOf());
    server.respond = () => ({ status: 410 });
    try {
      await outbox.fire('notify.Sent', { to: 'gone', n: 1 });
      expect((await drainOutbox(outbox)).dead).toBe(1);
      const [row] = await rowsOf(outbox, 'hooks.notify');
      expect([row.status, row.attempts]).toEqual(['dead', 1]);
      expect(row.lastError).toBe(
        `PermanentFailure: webhook to http://127.0.0.1:${server.port} answered 410 Gone: the endpoint takes no more events`,
      );
    } finally {
      server.respond = undefined;
      await outbox.close();
    }
  });

  it('a 429 with Retry-After schedules the retry then', async () => {
    const clock = testClock();
    const outbox = await openOutbox(db, configOf({ now: clock.now }), { clock: clock.now });
    server.respond = () => ({ status: 429, headers: { 'retry-after': '120' } });
    try {
      await outbox.fire('notify.Sent', { to: 'busy', n: 1 });
      expect((await drainOutbox(outbox, { respectBackoff: true })).failed).toBe(1);
      const [row] = await rowsOf(outbox, 'hooks.notify');
      expect(row.status).toBe('failed');
      expect(row.availableAt.getTime() - clock.now().getTime()).toBe(120_000);
      expect(row.lastError).toMatch(/answered 429 with Retry-After 120s/);
      server.respond = undefined;
      clock.advance(120_000);
      expect((await drainOutbox(outbox, { respectBackoff: true })).succeeded).toBe(1);
    } finally {
      server.respond = undefined;
      await outbox.close();
    }
  });

  it('a refused URL fails and is retried like any failure', async () => {
    const outbox = await openOutbox(db, configOf({ allowsUrl: () => false }, 2));
    await outbox.fire('notify.Sent', { to: 'nobody', n: 1 });
    expect(await drainOutbox(outbox, { limit: 1, respectBackoff: true })).toMatchObject({
      failed: 1,
    });
    const [row] = await rowsOf(outbox, 'hooks.notify');
    expect([row.status, row.attempts]).toEqual(['failed', 1]);
    expect(row.lastError).toBe(
      `DeliveryError: webhook to http://127.0.0.1:${server.port} refused by allowsUrl`,
    );
    await outbox.close();
  });

  it('no secret, token or URL path reaches a row or a log line', async () => {
    const logger = captureLogger();
    const outbox = await openOutbox(db, configOf({}, 2), { logger });
    server.respond = () => ({ status: 500, body: 'internal error' });
    try {
      await outbox.fire('notify.Sent', { to: 'x', n: 1 });
      await outbox.fire('notify.Sent', { to: 'y', n: 2 });
      await drainOutbox(outbox);
      const rows = await rowsOf(outbox, 'hooks.notify');
      expect(rows.map((r) => r.status)).toEqual(['dead', 'dead']);
      const written =
        JSON.stringify(rows) +
        JSON.stringify(logger.entries, (_k, v) =>
          v instanceof Error ? { message: v.message, cause: String(v.cause) } : v,
        );
      expect(logger.entries.length).toBeGreaterThan(0);
      expect(written).toContain('answered 500');
      for (const secret of [SECRET, 'tok_live_abcdef123456', 't0k3n-in-path'])
        expect(written).not.toContain(secret);
    } finally {
      server.respond = undefined;
      await outbox.close();
    }
  });
});
