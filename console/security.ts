/**
 * The console's safety rules in one place: who may act (a token, or the application's
 * `authorize`), the sessions a sign-in opens (a same-site, HttpOnly cookie), the CSRF
 * token every form carries, the response headers (a strict Content-Security-Policy), and
 * which hosts count as this machine.
 *
 * Reading and acting are apart on purpose: an action changes rows other people's
 * receivers act on, so it needs a grant that may act, a CSRF token bound to that grant
 * (a cookie alone is what a cross-site form would ride on), a same-origin request, and a
 * confirmation step; a read needs only whatever the mode asks to see the pages.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/** The cookie a sign-in sets: an opaque session id, never the token itself. */
export const SESSION_COOKIE = 'outbox_console';
/** The header a script or `curl` sends the token in (or `Authorization: Bearer <token>`). */
export const TOKEN_HEADER = 'x-outbox-console-token';
/** How long a sign-in lasts. */
export const SESSION_TTL_MS = 12 * 3600_000;

/** Compare two secrets in time independent of where they differ. */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A random token (`npx outbox console --token` without a value), 32 bytes, base64url. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The cookies of a request, by name (the first of a repeated name). */
export function cookiesOf(req: IncomingMessage): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (!cookies.has(name)) {
      try {
        cookies.set(name, decodeURIComponent(part.slice(eq + 1).trim()));
      } catch {
        // A malformed value is no session.
      }
    }
  }
  return cookies;
}

/** The token a request carries in a header: `x-outbox-console-token`, or a Bearer one. */
export function headerToken(req: IncomingMessage): string | undefined {
  const own = req.headers[TOKEN_HEADER];
  if (typeof own === 'string' && own !== '') return own;
  const auth = req.headers.authorization;
  const bearer = typeof auth === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
  return bearer?.[1];
}

/** One signed-in browser. */
export interface ConsoleSession {
  /** Who signed in (the name given at sign-in): what the audit log records. */
  readonly actor: string;
  /** When the session ends, epoch ms. */
  readonly expiresAt: number;
}

/**
 * The sessions of one console, in memory: a restart signs everyone out, which is the
 * right failure for a tool an operator opens when something is wrong.
 */
export class ConsoleSessions {
  readonly #sessions = new Map<string, ConsoleSession>();
  readonly #now: () => number;
  constructor(now: () => number) {
    this.#now = now;
  }
  /** Open a session for `actor`; returns its id (the cookie's value). */
  open(actor: string): string {
    const id = randomBytes(24).toString('base64url');
    this.#sweep();
    this.#sessions.set(id, { actor, expiresAt: this.#now() + SESSION_TTL_MS });
    return id;
  }
  /** The live session of this id, if any. */
  get(id: string | undefined): ConsoleSession | undefined {
    if (!id) return undefined;
    const session = this.#sessions.get(id);
    if (!session) return undefined;
    if (session.expiresAt <= this.#now()) {
      this.#sessions.delete(id);
      return undefined;
    }
    return session;
  }
  /** End a session (sign out). */
  close(id: string | undefined): void {
    if (id) this.#sessions.delete(id);
  }
  #sweep(): void {
    const now = this.#now();
    for (const [id, s] of this.#sessions) if (s.expiresAt <= now) this.#sessions.delete(id);
  }
}

/**
 * The CSRF token of a grant: an HMAC of what identifies it (the session id, or the actor an
 * `authorize` named) under the console's own random key. A cross-site page can make the
 * browser send the cookie, never read this value off a page, so a forged form lacks it.
 */
export function csrfTokenFor(key: Buffer, subject: string): string {
  return createHmac('sha256', key).update(`csrf:${subject}`).digest('base64url');
}

/** Whether a form's CSRF field is the token of `subject`. */
export function validCsrf(key: Buffer, subject: string, given: unknown): boolean {
  return typeof given === 'string' && sameSecret(given, csrfTokenFor(key, subject));
}

/**
 * Whether a state-changing request comes from a page of this console's own origin: the
 * browser's `Sec-Fetch-Site` (same-origin), else its `Origin` naming this Host. A request
 * with neither (curl, a script with the token in a header) is judged by its token alone.
 */
export function sameOrigin(req: IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none';
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || origin === 'null') return origin === undefined;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

/**
 * The Content-Security-Policy of every response: nothing but this origin's own script and
 * stylesheet (no inline script, no inline style, no eval), no frames, forms posting only
 * here. The pages carry no inline script at all, so no nonce is needed.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** The headers every console response carries. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
};

/** Whether `host` (a name or an address, as `--host` takes it) is this machine only. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || /^::ffff:127\./.test(h);
  return false;
}
