/**
 * `createConsoleHandler(outbox, options)`: the operations console as one plain Node
 * `(req, res)` handler — `http.createServer(handler)`, `app.use('/ops/outbox', handler)` in
 * Express, a Fastify or Koa route handing it `req.raw`/`ctx.req` and `res.raw`/`ctx.res`.
 * `npx outbox console` serves the same handler.
 *
 * Who may do what (security.ts has the mechanisms):
 * - `token`: every page needs it — sent as `Authorization: Bearer …` or
 *   `x-outbox-console-token`, or exchanged at `/login` for a session cookie (HttpOnly,
 *   SameSite=Strict, scoped to the mount path); a grant may act unless `readOnly`.
 * - `authorize(req)`: the application decides, with its own authentication: a
 *   {@link ConsoleGrant} (who, and whether they may act), or nothing (401).
 * - neither: the pages are served to whoever reaches them and no action is: a console
 *   with nobody to hold responsible does not change rows.
 * Every action is a POST with the grant's CSRF token, from this origin, and confirmed on a
 * page of its own first; `readOnly` serves none at all.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { buildAsyncApi } from '../catalogue/asyncapi.js';
import { ConfigurationError } from '../src/errors/outbox-error.js';
import type { Outbox } from '../src/outbox.js';
import { runtimeOf } from '../src/runtime.js';
import {
  type ActionContext,
  type ConsoleAuditHook,
  cancelAction,
  replayAction,
  requeueAction,
} from './actions.js';
import { CONSOLE_CSS, CONSOLE_JS } from './assets.js';
import { html } from './html.js';
import { hidden, href, page, type View } from './layout.js';
import {
  cataloguePage,
  deadLettersPage,
  eventPage,
  eventsPage,
  healthPage,
  messagePage,
  type PageContext,
  quietPage,
} from './pages.js';
import { uuidOf } from './reads.js';
import { BacklogSamples } from './sampler.js';
import {
  ConsoleSessions,
  cookiesOf,
  csrfTokenFor,
  headerToken,
  SECURITY_HEADERS,
  SESSION_COOKIE,
  SESSION_TTL_MS,
  sameOrigin,
  sameSecret,
  validCsrf,
} from './security.js';

/** Who a request is, as `authorize(req)` answers it. */
export interface ConsoleGrant {
  /** Who: the name the audit log records for this person's actions. */
  readonly actor: string;
  /**
   * Whether they may act (requeue, replay, cancel); false shows the pages only.
   * @defaultValue true
   */
  readonly mayAct?: boolean;
}

/** Options of {@link createConsoleHandler}. */
export interface ConsoleOptions {
  /**
   * Decide who a request is, with the application's own authentication (a session, an SSO
   * header set by a proxy): a {@link ConsoleGrant}, or `null`/`false` to refuse the request
   * (401, no page). Not with `token`.
   * @defaultValue none: see `token`
   */
  readonly authorize?: (
    req: IncomingMessage,
  ) => ConsoleGrant | null | false | undefined | Promise<ConsoleGrant | null | false | undefined>;
  /**
   * A shared secret every request must carry (a header, or the session cookie `/login`
   * sets in exchange for it): what `npx outbox console --token` uses. Not with `authorize`.
   * With neither, the pages are open to whoever reaches the handler and no action is served.
   * @defaultValue none
   */
  readonly token?: string;
  /**
   * Serve no action at all, whoever asks: the pages only.
   * @defaultValue false
   */
  readonly readOnly?: boolean;
  /**
   * The path the handler is mounted under (`/ops/outbox`), for its links. A request whose
   * URL starts with it has it stripped; one without it is taken as already stripped by the
   * framework. Without it, Express's `req.originalUrl` tells it.
   * @defaultValue `''` (or what `req.originalUrl` implies)
   */
  readonly basePath?: string;
  /** The heading of every page. @defaultValue `'outbox console'` */
  readonly title?: string;
  /**
   * How often the console samples the backlog for its chart, in milliseconds; 0 for only
   * when the health page is viewed. The timer is unref'd and stopped by `close()`.
   * @defaultValue 15000
   */
  readonly sampleIntervalMs?: number;
  /**
   * How often the health page refreshes itself in the browser, in seconds; 0 for never.
   * @defaultValue 10
   */
  readonly refreshSeconds?: number;
  /**
   * Told of every action inside its transaction (see {@link ConsoleAuditHook}): write an
   * audit row there. Every action is also logged through the outbox's logger.
   */
  readonly audit?: ConsoleAuditHook;
  /**
   * `info.title` and `info.version` of the AsyncAPI document `/catalogue/asyncapi.json`
   * serves. @defaultValue the title, and `'0.0.0'`
   */
  readonly asyncApi?: { readonly title: string; readonly version: string };
}

/** The console as a Node request handler, and what stops its sampling. */
export interface ConsoleHandler {
  /** Answer one request (Express's `next` is never called: the console answers all). */
  (req: IncomingMessage, res: ServerResponse, next?: unknown): Promise<void>;
  /** Stop the backlog sampling timer (the handler still answers). Idempotent. */
  close(): void;
}

/** What a request may do, once its grant is read. */
interface Access {
  /** Whether it may see the pages. */
  readonly read: boolean;
  /** Whether it may act (and is not read-only). */
  readonly act: boolean;
  readonly actor: string | undefined;
  /** What its CSRF token is bound to. */
  readonly subject: string | undefined;
  readonly reason: string | undefined;
}

/** The largest form body read, in bytes. */
const MAX_BODY = 64 * 1024;

/** A form body over {@link MAX_BODY}: answered 413, nothing done. */
class FormTooLarge extends Error {}

/**
 * The operations console for `outbox` (see the module comment): health, dead letters,
 * events, quiet receivers and the catalogue, and — to a grant that may act — requeue,
 * replay and cancel, each confirmed, audited and in one transaction.
 * @throws {ConfigurationError} for both `token` and `authorize`, an empty token, or a
 * `basePath` that is not a path.
 */
export function createConsoleHandler(outbox: Outbox, options: ConsoleOptions = {}): ConsoleHandler {
  const rt = runtimeOf(outbox);
  if (options.token !== undefined && options.authorize !== undefined) {
    throw new ConfigurationError(
      'createConsoleHandler(outbox, { token, authorize }): give one of them — token for a shared secret, authorize(req) for your own authentication',
      { path: 'token' },
    );
  }
  if (
    options.token !== undefined &&
    (typeof options.token !== 'string' || options.token.length < 16)
  ) {
    throw new ConfigurationError(
      'createConsoleHandler(outbox, { token }): the token must be a string of at least 16 characters (`npx outbox console --token` makes a random one)',
      { path: 'token' },
    );
  }
  const basePath = (options.basePath ?? '').replace(/\/+$/, '');
  if (basePath !== '' && !/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(basePath)) {
    throw new ConfigurationError(
      `createConsoleHandler(outbox, { basePath }) must be a path such as "/ops/outbox" (got ${JSON.stringify(options.basePath)})`,
      { path: 'basePath' },
    );
  }
  const csrfKey = randomBytes(32);
  const sessions = new ConsoleSessions(() => rt.clock().getTime());
  const samples = new BacklogSamples();
  const ctx: PageContext = {
    outbox,
    rt,
    samples,
    refreshSeconds: options.refreshSeconds ?? 10,
  };
  const intervalMs = options.sampleIntervalMs ?? 15_000;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let sampleWarned = false;
  const startSampling = () => {
    if (timer || closed || intervalMs <= 0) return;
    timer = setInterval(() => {
      outbox.health().then(
        (h) => samples.record(h),
        (error: unknown) => {
          if (!sampleWarned) rt.logger.warn('console: could not sample the backlog', { error });
          sampleWarned = true;
        },
      );
    }, intervalMs);
    timer.unref();
  };
  const title = options.title ?? 'outbox console';

  async function accessOf(req: IncomingMessage): Promise<Access> {
    const readOnly = options.readOnly === true;
    const reasonReadOnly = 'this console was started read-only';
    if (options.authorize) {
      const grant = await options.authorize(req);
      if (!grant)
        return {
          read: false,
          act: false,
          actor: undefined,
          subject: undefined,
          reason: 'not authorized',
        };
      const mayAct = grant.mayAct !== false && !readOnly;
      return {
        read: true,
        act: mayAct,
        actor: grant.actor,
        subject: `grant:${grant.actor}`,
        reason: readOnly ? reasonReadOnly : mayAct ? undefined : 'your grant may not act',
      };
    }
    if (options.token !== undefined) {
      const given = headerToken(req);
      if (given !== undefined) {
        if (!sameSecret(given, options.token))
          return {
            read: false,
            act: false,
            actor: undefined,
            subject: undefined,
            reason: 'wrong token',
          };
        const named = req.headers['x-outbox-console-actor'];
        const actor =
          typeof named === 'string' && named !== '' ? named.slice(0, 100) : 'token holder';
        return {
          read: true,
          act: !readOnly,
          actor,
          subject: `token:${actor}`,
          reason: readOnly ? reasonReadOnly : undefined,
        };
      }
      const sid = cookiesOf(req).get(SESSION_COOKIE);
      const session = sessions.get(sid);
      if (!session)
        return {
          read: false,
          act: false,
          actor: undefined,
          subject: undefined,
          reason: 'sign in with the token',
        };
      return {
        read: true,
        act: !readOnly,
        actor: session.actor,
        subject: `session:${sid}`,
        reason: readOnly ? reasonReadOnly : undefined,
      };
    }
    return {
      read: true,
      act: false,
      actor: undefined,
      subject: undefined,
      reason: readOnly
        ? reasonReadOnly
        : 'no token is set, and actions need one (npx outbox console --token)',
    };
  }

  const handler = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    startSampling();
    const { path, base, query } = splitUrl(req, basePath);
    const method = req.method ?? 'GET';
    const send = (
      status: number,
      body: string,
      type = 'text/html; charset=utf-8',
      extra: Record<string, string | string[]> = {},
    ) => {
      if (res.headersSent) return;
      res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, ...extra });
      res.end(method === 'HEAD' ? undefined : body);
    };
    try {
      if (path === '/assets/console.css') return send(200, CONSOLE_CSS, 'text/css; charset=utf-8');
      if (path === '/assets/console.js')
        return send(200, CONSOLE_JS, 'text/javascript; charset=utf-8');
      const access = await accessOf(req);
      const view: View = {
        base,
        path,
        query,
        title,
        canAct: access.act,
        readOnlyReason: access.reason,
        actor: access.actor,
        csrf: access.subject === undefined ? undefined : csrfTokenFor(csrfKey, access.subject),
        tokenMode: options.token !== undefined,
        now: rt.clock(),
      };
      const isPost = method === 'POST';
      if (!isPost && method !== 'GET' && method !== 'HEAD')
        return send(
          405,
          messagePage({ ...view, canAct: false }, 'Method not allowed', `${method} is not served`),
          undefined,
          { allow: 'GET, HEAD, POST' },
        );

      // Sign in and out (token mode only).
      if (path === '/login' && options.token !== undefined) {
        if (!isPost)
          return send(200, loginPage({ ...view, csrf: csrfTokenFor(csrfKey, 'login') }, undefined));
        const form = await formOf(req);
        if (!sameOrigin(req) || !validCsrf(csrfKey, 'login', form.get('csrf')))
          return send(
            403,
            loginPage(
              { ...view, csrf: csrfTokenFor(csrfKey, 'login') },
              'This sign-in did not come from this console’s own page.',
            ),
          );
        const token = form.get('token') ?? '';
        if (!sameSecret(token, options.token))
          return send(
            401,
            loginPage({ ...view, csrf: csrfTokenFor(csrfKey, 'login') }, 'Wrong token.'),
          );
        const actor = (form.get('name') ?? '').trim().slice(0, 100) || 'token holder';
        const sid = sessions.open(actor);
        return send(303, '', 'text/plain; charset=utf-8', {
          location: href({ base }, '/'),
          'set-cookie': sessionCookie(sid, base, isSecure(req), SESSION_TTL_MS / 1000),
        });
      }
      if (path === '/logout' && isPost && options.token !== undefined) {
        const form = await formOf(req);
        if (
          access.subject === undefined ||
          !sameOrigin(req) ||
          !validCsrf(csrfKey, access.subject, form.get('csrf'))
        )
          return send(
            403,
            messagePage(
              { ...view, canAct: false },
              'Refused',
              'This request did not come from this console’s own page.',
            ),
          );
        sessions.close(cookiesOf(req).get(SESSION_COOKIE));
        return send(303, '', 'text/plain; charset=utf-8', {
          location: href({ base }, '/login'),
          'set-cookie': sessionCookie('', base, isSecure(req), 0),
        });
      }

      if (!access.read) {
        if (options.token !== undefined && !isPost && headerToken(req) === undefined)
          return send(303, '', 'text/plain; charset=utf-8', { location: href({ base }, '/login') });
        return send(
          401,
          messagePage(
            { ...view, canAct: false, actor: undefined },
            'Not signed in',
            `This console needs ${options.token !== undefined ? 'its token' : 'you to be authorized'}: ${access.reason ?? 'refused'}.`,
          ),
          undefined,
          options.token !== undefined
            ? { 'www-authenticate': 'Bearer realm="outbox console"' }
            : {},
        );
      }

      if (isPost) {
        const action = /^\/actions\/(requeue|replay|cancel)$/.exec(path)?.[1];
        if (!action)
          return send(404, messagePage(view, 'Not found', `nothing is served at POST ${path}`));
        if (!access.act)
          return send(
            403,
            messagePage(
              view,
              'Refused',
              `No action is served here: ${access.reason ?? 'refused'}. Nothing changed.`,
            ),
          );
        const form = await formOf(req);
        if (
          !sameOrigin(req) ||
          access.subject === undefined ||
          !validCsrf(csrfKey, access.subject, form.get('csrf'))
        )
          return send(
            403,
            messagePage(
              view,
              'Refused',
              'This request carries no valid CSRF token of this console (or came from another site). Nothing changed.',
            ),
          );
        const actionCtx: ActionContext = {
          outbox,
          rt,
          audit: options.audit,
          actor: access.actor ?? 'unknown',
          remoteAddress: req.socket?.remoteAddress,
        };
        const run =
          action === 'requeue' ? requeueAction : action === 'replay' ? replayAction : cancelAction;
        const answer = await run(actionCtx, view, form);
        return send(answer.status, answer.body);
      }

      if (path === '/') return send(200, await healthPage(ctx, view));
      if (path === '/dead') return send(200, await deadLettersPage(ctx, view));
      if (path === '/events') return send(200, await eventsPage(ctx, view));
      if (path === '/quiet') return send(200, await quietPage(ctx, view));
      if (path === '/catalogue') return send(200, cataloguePage(ctx, view));
      if (path === '/catalogue/asyncapi.json') {
        const document = buildAsyncApi(
          outbox.catalogue(),
          options.asyncApi ?? { title, version: '0.0.0' },
        );
        return send(
          200,
          `${JSON.stringify(document, null, 2)}\n`,
          'application/json; charset=utf-8',
          {
            'content-disposition': 'attachment; filename="asyncapi.json"',
          },
        );
      }
      if (path === '/find') {
        const q = (query.get('q') ?? '').trim();
        const uuid = uuidOf(q);
        const location = uuid
          ? href({ base }, `/events/${uuid}`)
          : q
            ? href({ base }, '/events', { key: q })
            : href({ base }, '/events');
        return send(303, '', 'text/plain; charset=utf-8', { location });
      }
      const eventPath = /^\/events\/([^/]+)$/.exec(path);
      if (eventPath) {
        const uuid = uuidOf(decodeURIComponent(eventPath[1]));
        const body = uuid ? await eventPage(ctx, view, uuid) : undefined;
        if (body) return send(200, body);
        return send(
          404,
          messagePage(
            view,
            'No such event',
            `No event ${uuid ?? eventPath[1]}: never fired, or pruned since.`,
          ),
        );
      }
      return send(404, messagePage(view, 'Not found', `nothing is served at ${path}`));
    } catch (error) {
      if (error instanceof FormTooLarge) {
        res.setHeader('connection', 'close');
        return send(
          413,
          'the form is larger than 64 KiB; nothing was done\n',
          'text/plain; charset=utf-8',
        );
      }
      rt.logger.error('console: a page failed', { path, error });
      const view: View = {
        base,
        path,
        query,
        title,
        canAct: false,
        readOnlyReason: 'an error occurred',
        actor: undefined,
        csrf: undefined,
        tokenMode: options.token !== undefined,
        now: new Date(),
      };
      send(
        500,
        messagePage(
          view,
          'Something went wrong',
          error instanceof Error ? error.message : String(error),
          true,
        ),
      );
    }
  };
  const consoleHandler = handler as ConsoleHandler;
  consoleHandler.close = () => {
    closed = true;
    if (timer) clearInterval(timer);
    timer = undefined;
  };
  return consoleHandler;
}

/** The path under the mount, the mount itself, and the query. */
function splitUrl(
  req: IncomingMessage,
  basePath: string,
): { path: string; base: string; query: URLSearchParams } {
  const url = new URL(req.url ?? '/', 'http://console.invalid');
  let path = url.pathname;
  let base = basePath;
  if (basePath !== '') {
    if (path === basePath || path.startsWith(`${basePath}/`)) path = path.slice(basePath.length);
  } else {
    const original = (req as { originalUrl?: unknown }).originalUrl;
    if (typeof original === 'string') {
      const full = new URL(original, 'http://console.invalid').pathname;
      const rest = path === '/' ? '' : path;
      if (full.endsWith(rest) && full.length > rest.length)
        base = full.slice(0, full.length - rest.length).replace(/\/+$/, '');
    }
  }
  if (path === '') path = '/';
  return { path, base, query: url.searchParams };
}

/** The form body of a POST (`application/x-www-form-urlencoded`), at most 64 KiB. */
async function formOf(req: IncomingMessage): Promise<URLSearchParams> {
  const parsed = (req as { body?: unknown }).body;
  if (parsed && typeof parsed === 'object' && !Buffer.isBuffer(parsed)) {
    const form = new URLSearchParams();
    for (const [k, v] of Object.entries(parsed as Record<string, unknown>))
      if (typeof v === 'string') form.set(k, v);
    return form;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new FormTooLarge();
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** The session cookie (an empty value and max-age 0 clears it). */
function sessionCookie(
  value: string,
  base: string,
  secure: boolean,
  maxAgeSeconds: number,
): string {
  return `${SESSION_COOKIE}=${encodeURIComponent(value)}; Path=${base || '/'}; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(maxAgeSeconds)}${secure ? '; Secure' : ''}`;
}

/** Whether the browser reached us over TLS (directly, or through a proxy that says so). */
function isSecure(req: IncomingMessage): boolean {
  return (
    (req.socket as TLSSocket | undefined)?.encrypted === true ||
    req.headers['x-forwarded-proto'] === 'https'
  );
}

/** `/login`: the token, and a name for the audit log. */
function loginPage(view: View, problem: string | undefined): string {
  return page(
    { ...view, canAct: true, actor: undefined },
    'Sign in',
    html`${problem ? html`<p class="message refusal">${problem}</p>` : ''}
<form method="post" action="${href(view, '/login')}" class="login">
${hidden('csrf', view.csrf)}
<label>Your name (what the audit log records) <input name="name" autocomplete="username" maxlength="100"></label>
<label>Console token <input name="token" type="password" autocomplete="current-password" required></label>
<button type="submit">sign in</button>
</form>
<p class="muted">The token is the one <code>npx outbox console --token</code> printed, or <code>OUTBOX_CONSOLE_TOKEN</code>. The sign-in lasts 12 hours, in this browser only.</p>`,
  );
}
