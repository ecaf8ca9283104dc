/**
 * The `/metrics` endpoint of `outbox relay --metrics-port N`: a plain `node:http` server
 * serving one registry's exposition text, bound to 127.0.0.1 unless `--metrics-host`
 * says otherwise (metrics name receivers and backlogs; exposing them beyond the host is a
 * decision, not a default). Closed when the relay stops.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsRegistry } from '../src/observe/metrics/registry.js';

/** A listening metrics endpoint. */
export interface MetricsServer {
  /** `http://127.0.0.1:9464/metrics`: where it listens (the real port when asked for 0). */
  readonly url: string;
  readonly port: number;
  /** Stop listening and end open connections. */
  close(): Promise<void>;
}

/**
 * Serve `registry` at `GET /metrics` on `host:port` (port 0: any free one). Anything else
 * is a 404; a registry that fails to render is a 500 with the error's message.
 * @throws the listen error (a port in use: `EADDRINUSE`).
 */
export async function serveMetrics(
  registry: MetricsRegistry,
  host: string,
  port: number,
): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        response.writeHead(200, { 'content-type': registry.contentType });
        response.end(request.method === 'HEAD' ? undefined : text);
      },
      (error: unknown) => {
        response
          .writeHead(500, { 'content-type': 'text/plain' })
          .end(`${error instanceof Error ? error.message : String(error)}\n`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${bound}/metrics`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
