import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ReceivedMessage } from '../../../testing/conformance/index.js';

/** One request as the server got it: the raw bytes, the headers decoded as UTF-8. */
export interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/** How the server answers one request (after recording it): status, headers, body. */
export type Responder = (
  request: ReceivedRequest,
  response: ServerResponse,
) => 'hang' | { status: number; headers?: Record<string, string>; body?: string } | undefined;

/**
 * A real HTTP server on a loopback address, for the webhook tests: records every request,
 * answers 200 by default, and can be told to fail everything (500), fail some event ids,
 * hang without answering, or answer however a test needs.
 */
export interface WebhookServer {
  readonly url: string;
  readonly port: number;
  readonly requests: ReceivedRequest[];
  mode: 'up' | 'down' | 'stalled';
  readonly refused: Set<string>;
  respond: Responder | undefined;
  /** The requests read back as the conformance suite's messages. */
  received(): ReceivedMessage[];
  close(): Promise<void>;
}

/** Header values as the UTF-8 text the webhook sent (node:http reads them as latin1). */
function decodeHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const text = Array.isArray(value) ? value.join(', ') : (value ?? '');
    out[name] = Buffer.from(text, 'latin1').toString('utf8');
  }
  return out;
}

export async function startWebhookServer(host = '127.0.0.1'): Promise<WebhookServer> {
  const requests: ReceivedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const state = {
    mode: 'up' as WebhookServer['mode'],
    refused: new Set<string>(),
    respond: undefined as Responder | undefined,
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: decodeHeaders(req.headers),
        body: Buffer.concat(chunks),
      };
      const answer = state.respond?.(request, res);
      if (answer === 'hang' || (answer === undefined && state.mode === 'stalled')) {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if (answer) {
        res.writeHead(answer.status, answer.headers).end(answer.body ?? '');
        if (answer.status >= 200 && answer.status < 300) requests.push(request);
        return;
      }
      if (state.mode === 'down' || state.refused.has(request.headers['outbox-event-id'])) {
        res.writeHead(500).end('refused');
        return;
      }
      requests.push(request);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/hooks`,
    port,
    requests,
    get mode() {
      return state.mode;
    },
    set mode(m) {
      state.mode = m;
    },
    refused: state.refused,
    get respond() {
      return state.respond;
    },
    set respond(r) {
      state.respond = r;
    },
    received: () =>
      requests.map((r) => ({
        eventId: r.headers['outbox-event-id'],
        name: r.headers['outbox-topic'],
        payload: JSON.parse(r.body.toString('utf8')),
        headers: r.headers,
        orderingKey: r.headers['outbox-ordering-key'] ?? null,
      })),
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Whether `request` carries `sha256=<HMAC-SHA256 of its raw body with secret>` in
 * `header`: computed here with node:crypto and compared in constant time, as a receiver
 * would, independently of the transport's signing code.
 */
export function signatureValid(request: ReceivedRequest, secret: string, header: string): boolean {
  const got = request.headers[header];
  if (!got?.startsWith('sha256=')) return false;
  const expected = createHmac('sha256', secret).update(request.body).digest();
  const given = Buffer.from(got.slice('sha256='.length), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
