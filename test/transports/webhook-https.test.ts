/**
 * Webhooks over HTTPS to a real TLS server on 127.0.0.1, with a certificate made for the
 * test by openssl: the pinned connection still checks the certificate against the URL's
 * host name, and `ca` trusts a CA of one's own.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryResult, OutboxEvent } from '../../src/declare/types.js';
import { type WebhookLookup, webhook } from '../../src/index.js';
import { conformanceEvent, conformanceItems } from '../../testing/conformance/index.js';
import { signatureValid } from './support/webhook-server.js';

const SECRET = 'whsec_tls_0a1b2c3d';
const never = new AbortController().signal;
const lookup: WebhookLookup = async (hostname) => {
  if (hostname === 'hooks.example.test' || hostname === 'other.example.test')
    return [{ address: '127.0.0.1', family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};
const loopbackOnly = { allowsAddress: (address: string) => address === '127.0.0.1', lookup };

function send(transport: ReturnType<typeof webhook>, events: OutboxEvent[]) {
  return transport.deliverBatch(conformanceItems(events, never), { signal: never });
}

function messageOf(result: DeliveryResult): string {
  if (result.status === 'sent') return 'sent';
  const error = result.error as Error & { cause?: Error & { code?: string } };
  return `${error.message} ${error.cause?.code ?? ''} ${error.cause?.message ?? ''}`;
}

describe('webhook over HTTPS (a real TLS server on 127.0.0.1)', () => {
  let dir: string;
  let cert: string;
  let server: Server;
  let port: number;
  const received: { headers: Record<string, string | string[] | undefined>; body: Buffer }[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-tls-'));
    // A self-signed certificate for hooks.example.test only (it is its own CA).
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=hooks.example.test',
        '-addext',
        'subjectAltName=DNS:hooks.example.test',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
    server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers to an https: endpoint whose certificate chains to the given ca, signed', async () => {
    const transport = webhook({
      url: `https://hooks.example.test:${port}/hooks`,
      secret: SECRET,
      ca: cert,
      ...loopbackOnly,
    });
    const e = conformanceEvent();
    expect(await send(transport, [e])).toEqual([{ status: 'sent' }]);
    const request = received.find((r) => r.headers['outbox-event-id'] === e.id);
    expect(request).toBeDefined();
    const headers = Object.fromEntries(
      Object.entries(request!.headers).map(([k, v]) => [k, String(v)]),
    );
    const asReceived = { method: 'POST', path: '/hooks', headers, body: request!.body };
    expect(signatureValid(asReceived, SECRET, 'outbox-signature')).toBe(true);
    await transport.close();
  });

  it('refuses a certificate not made for the URL host name, though the address is the same', async () => {
    const transport = webhook({
      url: `https://other.example.test:${port}/hooks`,
      secret: SECRET,
      ca: cert,
      ...loopbackOnly,
    });
    const before = received.length;
    const [result] = await send(transport, [conformanceEvent()]);
    expect(result!.status).toBe('failed');
    expect(messageOf(result!)).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID|altnames|Hostname/i);
    expect(received.length).toBe(before);
    await transport.close();
  });

  it("refuses a certificate that chains to no trusted CA (without ca: Node's bundled roots)", async () => {
    const transport = webhook({
      url: `https://hooks.example.test:${port}/hooks`,
      secret: SECRET,
      ...loopbackOnly,
    });
    const before = received.length;
    const [result] = await send(transport, [conformanceEvent()]);
    expect(result!.status).toBe('failed');
    expect(messageOf(result!)).toMatch(/SELF_SIGNED|self.signed|certificate/i);
    expect(received.length).toBe(before);
    await transport.close();
  });
});
