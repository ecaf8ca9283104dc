/**
 * The page shell every console page shares (header, navigation, the sign-in state) and
 * the small helpers pages format with: links under the mount path, times, ages, JSON, and
 * the action forms (each with its CSRF token, shown only to a grant that may act).
 */
import { html, type SafeHtml } from './html.js';
import { redactSecrets } from './redact.js';

/** What a page knows of the request it answers. */
export interface View {
  /** The path the console is mounted under (`''` at the root, `/ops/outbox` below one). */
  readonly base: string;
  /** The request's path under the mount, e.g. `/dead`. */
  readonly path: string;
  /** The request's query. */
  readonly query: URLSearchParams;
  /** The console's title (the page heading). */
  readonly title: string;
  /** Whether this request may act: shows the action forms. */
  readonly canAct: boolean;
  /** Why it may not (read-only, not signed in), for the banner. */
  readonly readOnlyReason: string | undefined;
  /** Who is signed in, if anyone. */
  readonly actor: string | undefined;
  /** The CSRF token of this request's grant, when it may act. */
  readonly csrf: string | undefined;
  /** Whether a sign-in page exists (token mode). */
  readonly tokenMode: boolean;
  /** The moment the page is rendered at (the outbox's clock). */
  readonly now: Date;
}

/** A link to `path` under the mount, with `params` (empty values left out). */
export function href(
  view: Pick<View, 'base'>,
  path: string,
  params: Record<string, string | undefined> = {},
): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, v);
  const query = q.toString();
  return `${view.base}${path}${query ? `?${query}` : ''}`;
}

/** A timestamp as ISO text in a `<time>`. */
export function time(d: Date | null | undefined): SafeHtml {
  if (!d) return html`<span class="muted">–</span>`;
  return html`<time datetime="${d.toISOString()}">${d
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z')}</time>`;
}

/** `4m 12s`, `2h 5m`, `3d 4h`: an age for people. */
export function age(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** A value as indented JSON in a `<pre>` (escaped: a payload is the users' data). */
export function jsonBlock(value: unknown): SafeHtml {
  let text: string;
  try {
    text = JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    text = String(value);
  }
  return html`<pre class="json">${text}</pre>`;
}

/** An error as recorded, secrets redacted, in a `<pre>` (first line kept in the summary). */
export function errorBlock(error: string | null): SafeHtml {
  if (error === null) return html`<span class="muted">(no error recorded)</span>`;
  const shown = redactSecrets(error);
  const first = shown.split('\n')[0];
  return html`<details class="error"><summary>${first.length > 200 ? `${first.slice(0, 200)}…` : first}</summary><pre>${shown}</pre></details>`;
}

/** A hidden field. */
export function hidden(name: string, value: string | undefined): SafeHtml {
  return value === undefined ? html`` : html`<input type="hidden" name="${name}" value="${value}">`;
}

/**
 * An action form posting to `path` with `fields` and the CSRF token, or nothing when this
 * request may not act. The first step of every action is a confirmation page.
 */
export function actionForm(
  view: View,
  path: string,
  label: string,
  fields: Record<string, string | undefined>,
  options: { readonly danger?: boolean } = {},
): SafeHtml {
  if (!view.canAct || view.csrf === undefined) return html``;
  return html`<form method="post" action="${href(view, path)}" class="action">
${Object.entries(fields).map(([k, v]) => hidden(k, v))}${hidden('csrf', view.csrf)}<button type="submit"${options.danger ? html` class="danger"` : ''}>${label}</button></form>`;
}

/** "Next page" (and "first page") links of a keyset page. */
export function pager(
  view: View,
  cursorName: string,
  next: string | undefined,
  keep: Record<string, string | undefined> = {},
): SafeHtml {
  const first = view.query.get(cursorName)
    ? html`<a href="${href(view, view.path, keep)}">« first page</a>`
    : '';
  const more = next
    ? html`<a rel="next" href="${href(view, view.path, { ...keep, [cursorName]: next })}">next page »</a>`
    : '';
  return first || more ? html`<nav class="pager">${first} ${more}</nav>` : html``;
}

/** Page numbers over a list held in memory (the config's receivers, the catalogue). */
export function pageOf<T>(
  view: View,
  items: readonly T[],
  size: number,
): { rows: readonly T[]; pager: SafeHtml } {
  const pages = Math.max(1, Math.ceil(items.length / size));
  const asked = Number(view.query.get('page') ?? '1');
  const page = Number.isSafeInteger(asked) && asked >= 1 && asked <= pages ? asked : 1;
  const keep = Object.fromEntries([...view.query].filter(([k]) => k !== 'page'));
  const link = (n: number, text: string) =>
    html`<a href="${href(view, view.path, { ...keep, page: String(n) })}">${text}</a>`;
  const nav =
    pages > 1
      ? html`<nav class="pager">${page > 1 ? link(page - 1, '« previous') : ''} page ${page} of ${pages} ${page < pages ? link(page + 1, 'next »') : ''}</nav>`
      : html``;
  return { rows: items.slice((page - 1) * size, page * size), pager: nav };
}

const NAV: readonly (readonly [string, string])[] = [
  ['/', 'Health'],
  ['/dead', 'Dead letters'],
  ['/events', 'Events'],
  ['/quiet', 'Quiet receivers'],
  ['/catalogue', 'Catalogue'],
];

/** A whole page: the shell around `body`. `refreshSeconds`: the refresh script reloads it. */
export function page(
  view: View,
  heading: string,
  body: SafeHtml,
  options: { readonly refreshSeconds?: number; readonly status?: SafeHtml } = {},
): string {
  const current = (path: string) =>
    path === '/' ? view.path === '/' : view.path === path || view.path.startsWith(`${path}/`);
  const who = view.actor
    ? html`signed in as <strong>${view.actor}</strong>${
        view.tokenMode
          ? html` <form method="post" action="${href(view, '/logout')}" class="inline">${hidden('csrf', view.csrf)}<button type="submit">sign out</button></form>`
          : ''
      }`
    : view.tokenMode
      ? html`<a href="${href(view, '/login')}">sign in</a>`
      : '';
  const banner = view.canAct
    ? ''
    : html`<p class="banner read-only" data-testid="read-only">Read-only: ${view.readOnlyReason ?? 'no action is served'}.</p>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${heading} · ${view.title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${href(view, '/assets/console.css')}">
<script src="${href(view, '/assets/console.js')}" defer></script>
</head>
<body${options.refreshSeconds ? html` data-refresh="${options.refreshSeconds}"` : ''}>
<header>
  <a class="brand" href="${href(view, '/')}">${view.title}</a>
  <nav>${NAV.map(([path, label]) => html`<a href="${href(view, path)}"${current(path) ? html` aria-current="page"` : ''}>${label}</a>`)}</nav>
  <form method="get" action="${href(view, '/find')}" class="find"><input name="q" placeholder="event id or ordering key" aria-label="event id or ordering key" size="30"><button type="submit">find</button></form>
  ${options.refreshSeconds ? html`<label class="refresh"><input type="checkbox" id="auto-refresh" checked> refresh every ${options.refreshSeconds}s</label>` : ''}
  <span class="who">${who}</span>
</header>
${banner}
<main>
<h1>${heading}</h1>
${options.status ?? ''}
${body}
</main>
<footer>outboxkit console · rendered ${time(view.now)}</footer>
</body>
</html>
`.text;
}
