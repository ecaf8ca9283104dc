import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { type ConsoleOptions, createConsoleHandler } from '../../console/index.js';
import { defineOutbox, event, type Outbox, receiver } from '../../src/index.js';

/** A console token long enough for the handler's check. */
export const TOKEN = 'test-token-0123456789abcdef';

/**
 * The console tests' outbox: orders mailed (failing while `state.failing`, one attempt,
 * so a drain dead-letters at once) and posted to a ledger in a lane of its own (always
 * succeeding); a reminder due a day later; and a follow-up event with a receiver of its own.
 */
export function consoleConfig() {
  const state = { failing: true, error: 'smtp is down' };
  const Order = event({
    schema: z.object({ n: z.number(), note: z.string().optional() }),
    description: 'An order was placed.',
  });
  const config = defineOutbox({
    events: {
      'shop.OrderPlaced': Order,
      'shop.OrderMailed': event({ schema: z.object({ n: z.number() }) }),
    },
    receivers: {
      'mail.send': receiver('shop.OrderPlaced', {
        handle: () => {
          if (state.failing) throw new Error(state.error);
        },
        maxAttempts: 1,
      }),
      'ledger.post': receiver('shop.OrderPlaced', { handle: () => {}, lane: 'ledger' }),
      'mail.remind': receiver('shop.OrderPlaced', {
        handle: () => {},
        due: { days: 1 },
      }),
      'audit.mailed': receiver('shop.OrderMailed', { handle: () => {} }),
    },
  });
  return { config, state };
}

/** A console served over HTTP on a free port of 127.0.0.1. */
export interface ServedConsole {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

/**
 * Serve `createConsoleHandler(outbox, options)` (under `mount`, when given). `express`: strip
 * the mount from `req.url` and keep the whole URL in `req.originalUrl`, as Express's
 * `app.use(mount, handler)` does.
 */
export async function serveConsole(
  outbox: Outbox,
  options: ConsoleOptions = {},
  mount = '',
  { express = false } = {},
): Promise<ServedConsole> {
  const handler = createConsoleHandler(outbox, { sampleIntervalMs: 0, ...options });
  const server = createServer((req, res) => {
    if (mount && !(req.url ?? '/').startsWith(mount)) {
      res.writeHead(404).end('not the console');
      return;
    }
    if (express) {
      Object.assign(req, { originalUrl: req.url });
      req.url = (req.url ?? '/').slice(mount.length) || '/';
    }
    void handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${mount}`,
    server,
    close: async () => {
      handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A response, read whole. */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

/** A small browser: keeps the session cookie, sends forms as a same-origin page would. */
export class Client {
  cookie: string | undefined;
  constructor(
    readonly url: string,
    readonly headers: Record<string, string> = {},
  ) {}

  async get(path: string): Promise<Answer> {
    const res = await fetch(this.url + path, {
      redirect: 'manual',
      headers: { ...this.headers, ...(this.cookie ? { cookie: this.cookie } : {}) },
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  async post(
    path: string,
    fields: Record<string, string | undefined>,
    extra: Record<string, string> = {},
  ): Promise<Answer> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) body.set(k, v);
    const res = await fetch(this.url + path, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: new URL(this.url).origin,
        ...this.headers,
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...extra,
      },
      body,
    });
    const setCookie = res.headers.get('set-cookie');
    if (setCookie) this.cookie = setCookie.split(';')[0];
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  /** Sign in at /login with the token. */
  async signIn(token: string, name = 'alice'): Promise<Answer> {
    const form = await this.get('/login');
    return this.post('/login', { name, token, csrf: csrfIn(form.text) });
  }
}

/** The CSRF token of the first form of a page. */
export function csrfIn(text: string): string {
  const m = /name="csrf" value="([^"]+)"/.exec(text);
  if (!m) throw new Error(`no CSRF token in the page:\n${text.slice(0, 2000)}`);
  return m[1];
}
