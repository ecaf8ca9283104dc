/**
 * The console's only script and stylesheet, served from its own paths so the
 * Content-Security-Policy admits `'self'` and nothing inline. The script does one thing:
 * on a page that asks for it (`<body data-refresh="10">`), re-fetch the page every few
 * seconds and swap its `<main>` in, unless the box is unticked or a form is being filled.
 * Parsed with DOMParser, whose documents never run scripts; the markup is the server's own,
 * escaped as every page is.
 */

/** `/assets/console.js`. */
export const CONSOLE_JS = `(() => {
  'use strict';
  const seconds = Number(document.body.dataset.refresh || 0);
  const box = document.getElementById('auto-refresh');
  if (!seconds || !box) return;
  let busy = false;
  setInterval(async () => {
    if (busy || !box.checked || document.querySelector('main form:focus-within')) return;
    busy = true;
    try {
      const res = await fetch(location.href, { credentials: 'same-origin', headers: { accept: 'text/html' } });
      // Signed out meanwhile (the sign-in page answered): show it, rather than swap it in.
      if (res.redirected) return location.reload();
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
      const fresh = doc.querySelector('main');
      const main = document.querySelector('main');
      if (fresh && main) main.replaceWith(document.adoptNode(fresh));
    } catch {
      // The next tick tries again.
    } finally {
      busy = false;
    }
  }, seconds * 1000);
})();
`;

/** `/assets/console.css`. */
export const CONSOLE_CSS = `:root { color-scheme: light; --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --bad: #cf222e; --warn: #9a6700; --ok: #1a7f37; --accent: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: #fff; }
header { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; padding: .6rem 1.2rem; border-bottom: 1px solid var(--line); background: #f6f8fa; }
header nav a { margin-right: .8rem; color: var(--accent); text-decoration: none; }
header nav a[aria-current="page"] { font-weight: 600; color: var(--fg); border-bottom: 2px solid var(--accent); }
.brand { font-weight: 700; color: var(--fg); text-decoration: none; }
.find { margin-left: auto; }
.who form.inline { display: inline; }
main { padding: 1rem 1.2rem 2rem; max-width: 1400px; }
h1 { font-size: 1.4rem; margin: .2rem 0 1rem; word-break: break-all; }
h2 { font-size: 1.1rem; margin: 1.6rem 0 .6rem; }
table { border-collapse: collapse; width: 100%; margin: .4rem 0; }
th, td { text-align: left; vertical-align: top; padding: .35rem .5rem; border-bottom: 1px solid var(--line); }
th { font-weight: 600; background: #f6f8fa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.mono, pre, code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { white-space: pre-wrap; word-break: break-word; margin: .2rem 0; background: #f6f8fa; padding: .5rem; border-radius: 4px; max-height: 28rem; overflow: auto; }
.muted { color: var(--muted); }
.bad, .status.dead { color: var(--bad); font-weight: 600; }
.warn { color: var(--warn); }
.ok, .status.succeeded { color: var(--ok); }
.summary { display: flex; flex-wrap: wrap; gap: .8rem; }
.stat { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .9rem; min-width: 8rem; }
.stat .n { display: block; font-size: 1.5rem; font-weight: 600; }
.stat.bad { border-color: var(--bad); }
.stat.warn { border-color: var(--warn); }
.chart { margin: 1rem 0; }
.chart svg { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; background: #fff; }
.chart figcaption { color: var(--muted); font-size: 12px; }
.key.owed { color: #1f6feb; font-weight: 600; }
.key.dead { color: var(--bad); font-weight: 600; }
.banner { margin: 0; padding: .5rem 1.2rem; background: #fff8c5; border-bottom: 1px solid #d4a72c; }
form.action { display: inline-block; margin: .1rem .3rem .1rem 0; }
form.filter { margin: .4rem 0 .8rem; }
button { font: inherit; padding: .2rem .6rem; border: 1px solid var(--line); border-radius: 4px; background: #f6f8fa; cursor: pointer; }
button.danger { border-color: var(--bad); color: var(--bad); }
.confirm { margin: 1rem 0; }
.confirm button { font-weight: 600; }
details.error summary { cursor: pointer; color: var(--bad); }
.error-cell { max-width: 32rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
ul.history { margin: 0; padding-left: 1rem; }
.pager { margin: .8rem 0; }
.pager a { margin-right: 1rem; }
.message.refusal { color: var(--bad); }
footer { padding: .6rem 1.2rem; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line); }
.login { max-width: 26rem; }
.login label { display: block; margin: .6rem 0; }
.login input { width: 100%; }
`;
