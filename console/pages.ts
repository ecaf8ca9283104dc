/**
 * The console's pages, each a function of the outbox and the request's {@link View} to
 * HTML, reading only through the operations' functions (`health()`, `quietReceivers()`,
 * `catalogue()`, the holding dead letters of `outbox health`) and the keyset reads of
 * reads.ts. Every value from the database passes through `html`, which escapes it.
 */

import { HELD_BACK_COUNT_CAP, readHoldingDeadLetters } from '../src/ops/held-back.js';
import type { Outbox } from '../src/outbox.js';
import type { Runtime } from '../src/runtime.js';
import { backlogChart } from './chart.js';
import { html, type SafeHtml } from './html.js';
import {
  actionForm,
  age,
  errorBlock,
  href,
  jsonBlock,
  page,
  pageOf,
  pager,
  time,
  type View,
} from './layout.js';
import {
  type ConsoleEvent,
  readCauseChain,
  readDeadLettersPage,
  readDeliveriesOfEvent,
  readEventByUuid,
  readOrderingKeyRows,
  readRecentEvents,
} from './reads.js';
import { isSecretHeader, redactSecrets } from './redact.js';
import type { BacklogSamples } from './sampler.js';

/** Rows per page of every list. */
export const PAGE_SIZE = 50;

/** What the pages read from. */
export interface PageContext {
  readonly outbox: Outbox;
  readonly rt: Runtime;
  readonly samples: BacklogSamples;
  /** How often the health page refreshes itself, in seconds (0: never). */
  readonly refreshSeconds: number;
}

const eventLink = (view: View, id: string, text: string = id) =>
  html`<a class="mono" href="${href(view, `/events/${id}`)}">${text}</a>`;
const keyLink = (view: View, key: string | null) =>
  key === null
    ? html`<span class="muted">–</span>`
    : html`<a class="mono" href="${href(view, '/events', { key })}">${key}</a>`;

/** `/`: the health, per receiver and lane, worst first; the chart; what holds keys back. */
export async function healthPage(ctx: PageContext, view: View): Promise<string> {
  const health = await ctx.outbox.health({ now: view.now });
  ctx.samples.record(health);
  const lanes = new Map<
    string,
    {
      owed: number;
      scheduled: number;
      claimed: number;
      dead: number;
      oldest: number | undefined;
      receivers: number;
    }
  >();
  const laneOf = (key: string) => ctx.rt.config.receiver(key)?.lane ?? '(not declared)';
  for (const r of health.receivers) {
    const lane = laneOf(r.receiverKey);
    const l = lanes.get(lane) ?? {
      owed: 0,
      scheduled: 0,
      claimed: 0,
      dead: 0,
      oldest: undefined,
      receivers: 0,
    };
    const since = r.oldestOwedAt?.getTime();
    lanes.set(lane, {
      owed: l.owed + r.owed,
      scheduled: l.scheduled + r.scheduled,
      claimed: l.claimed + r.claimed,
      dead: l.dead + r.dead,
      oldest: since === undefined ? l.oldest : Math.min(l.oldest ?? since, since),
      receivers: l.receivers + 1,
    });
  }
  const laneRows = [...lanes].sort(
    ([a, x], [b, y]) =>
      y.owed - x.owed ||
      (x.oldest ?? Infinity) - (y.oldest ?? Infinity) ||
      y.dead - x.dead ||
      (a < b ? -1 : 1),
  );
  const holding =
    health.dead > 0
      ? await readHoldingDeadLetters(ctx.rt.sequelize, ctx.rt.tables, ctx.rt.dialect)
      : [];
  const ageOf = (d: Date | null) =>
    d
      ? html`<span title="${d.toISOString()}">${age(view.now.getTime() - d.getTime())}</span>`
      : html`<span class="muted">–</span>`;
  const { rows, pager: receiverPager } = pageOf(view, health.receivers, PAGE_SIZE);
  const body = html`
<section class="summary" aria-label="totals">
  <div class="stat${health.owed > 0 ? ' warn' : ''}"><span class="n" data-testid="owed">${health.owed}</span> owed</div>
  <div class="stat"><span class="n">${ageOf(health.oldestOwedAt)}</span> oldest owed</div>
  <div class="stat"><span class="n">${health.claimed}</span> claimed</div>
  <div class="stat${health.lapsedLeases > 0 ? ' warn' : ''}"><span class="n">${health.lapsedLeases}</span> lapsed leases</div>
  <div class="stat"><span class="n">${health.scheduled}</span> scheduled</div>
  <div class="stat${health.dead > 0 ? ' bad' : ''}"><span class="n" data-testid="dead">${health.dead}</span> <a href="${href(view, '/dead')}">dead</a></div>
</section>
${backlogChart(ctx.samples.within(view.now.getTime()), view.now.getTime())}
<h2>Receivers, worst first</h2>
${
  rows.length === 0
    ? html`<p class="ok">No receiver has anything owed, scheduled or dead.</p>`
    : html`<table class="receivers"><thead><tr><th>receiver</th><th>lane</th><th>owed</th><th>oldest owed</th><th>claimed</th><th>scheduled</th><th>dead</th><th></th></tr></thead><tbody>
${rows.map(
  (r) =>
    html`<tr><td class="mono">${r.receiverKey}</td><td>${laneOf(r.receiverKey)}</td><td class="num">${r.owed}</td><td>${ageOf(r.oldestOwedAt)}</td><td class="num">${r.claimed}</td><td class="num">${r.scheduled}</td><td class="num${r.dead > 0 ? ' bad' : ''}">${r.dead > 0 ? html`<a href="${href(view, '/dead', { receiver: r.receiverKey })}">${r.dead}</a>` : '0'}</td><td>${r.dead > 0 ? actionForm(view, '/actions/requeue', 'requeue all dead…', { receiver: r.receiverKey }) : ''}</td></tr>`,
)}</tbody></table>${receiverPager}`
}
<h2>Lanes</h2>
${
  laneRows.length === 0
    ? html`<p class="ok">Every lane is idle.</p>`
    : html`<table class="lanes"><thead><tr><th>lane</th><th>receivers behind</th><th>owed</th><th>oldest owed</th><th>claimed</th><th>scheduled</th><th>dead</th></tr></thead><tbody>
${laneRows.map(([lane, l]) => html`<tr><td>${lane}</td><td class="num">${l.receivers}</td><td class="num">${l.owed}</td><td>${l.oldest === undefined ? html`<span class="muted">–</span>` : age(view.now.getTime() - l.oldest)}</td><td class="num">${l.claimed}</td><td class="num">${l.scheduled}</td><td class="num">${l.dead}</td></tr>`)}</tbody></table>`
}
${
  holding.length === 0
    ? ''
    : html`<h2>Held back by dead letters</h2>
<p>Each of these dead letters holds back the later rows of its ordering key: requeue it (or cancel what waits) to let the key move.</p>
<table class="holding"><thead><tr><th>dead letter</th><th>receiver</th><th>ordering key</th><th>event</th><th>rows waiting</th><th></th></tr></thead><tbody>
${holding.map(
  (d) =>
    html`<tr><td class="mono">#${d.deliveryId}</td><td class="mono">${d.receiverKey}${d.target ? ` → ${d.target}` : ''}</td><td>${keyLink(view, d.orderingKey)}</td><td>${eventLink(view, d.eventId)}</td><td class="num">${d.heldBack >= HELD_BACK_COUNT_CAP ? `${d.heldBack}+` : d.heldBack}</td><td>${actionForm(view, '/actions/requeue', 'requeue…', { id: d.deliveryId })}</td></tr>`,
)}</tbody></table>`
}`;
  return page(view, 'Health', body, { refreshSeconds: ctx.refreshSeconds });
}

/** `/dead`: the dead letters, newest first, a page at a time, with what each holds back. */
export async function deadLettersPage(ctx: PageContext, view: View): Promise<string> {
  const receiver = view.query.get('receiver') || undefined;
  const { rows, next } = await readDeadLettersPage(ctx.rt, {
    receiverKey: receiver,
    after: view.query.get('after') ?? undefined,
    limit: PAGE_SIZE,
  });
  const durable = ctx.rt.config.receivers.filter((r) => r.mode === 'durable');
  const body = html`
<form method="get" action="${href(view, '/dead')}" class="filter">
  <label>receiver <select name="receiver"><option value="">every receiver</option>${durable.map((r) => html`<option${r.key === receiver ? html` selected` : ''}>${r.key}</option>`)}</select></label>
  <button type="submit">filter</button>
</form>
${
  view.canAct
    ? html`<form method="post" action="${href(view, '/actions/requeue')}" class="filter action">
  <input type="hidden" name="csrf" value="${view.csrf}">
  ${receiver ? html`<input type="hidden" name="receiver" value="${receiver}">` : ''}
  <label>requeue the dead letters ${receiver ? html`of <span class="mono">${receiver}</span> ` : ''}whose topic is <input name="topic" placeholder="a name or a prefix such as library.*" size="32"></label>
  <button type="submit">requeue…</button>
</form>`
    : ''
}
${receiver && rows.length > 0 ? actionForm(view, '/actions/requeue', `requeue every dead letter of ${receiver}…`, { receiver }) : ''}
${
  rows.length === 0
    ? html`<p class="ok">No dead letters${receiver ? html` of <span class="mono">${receiver}</span>` : ''}.</p>`
    : html`<table class="dead-letters"><thead><tr><th>row</th><th>receiver</th><th>event</th><th>attempts</th><th>dead at</th><th>error</th><th>holds back</th><th></th></tr></thead><tbody>
${rows.map(
  (d) =>
    html`<tr data-delivery="${d.deliveryId}"><td class="mono">#${d.deliveryId}</td><td class="mono">${d.receiverKey}${d.target ? ` → ${d.target}` : ''}</td><td>${d.eventName}<br>${eventLink(view, d.eventId)}${d.orderingKey !== null ? html`<br>key ${keyLink(view, d.orderingKey)}` : ''}</td><td class="num">${d.attempts}/${d.maxAttempts}</td><td>${time(d.deadAt)}</td><td class="error-cell">${errorBlock(d.lastError)}</td><td>${
      d.behind
        ? html`${eventLink(view, d.behind.eventId, `row #${d.behind.deliveryId}`)}${d.behindCount > 1 ? html` and ${d.behindCount >= 1000 ? '999+' : d.behindCount - 1} more` : ''}`
        : html`<span class="muted">nothing</span>`
    }</td><td>${actionForm(view, '/actions/requeue', 'requeue…', { id: d.deliveryId })}${actionForm(view, '/actions/replay', 'replay event…', { event: d.eventId, receiver: d.receiverKey })}</td></tr>`,
)}</tbody></table>`
}
${pager(view, 'after', next, { receiver })}`;
  return page(view, 'Dead letters', body);
}

/** `/events`: the newest events a page at a time, or an ordering key's live rows. */
export async function eventsPage(ctx: PageContext, view: View): Promise<string> {
  const key = view.query.get('key');
  if (key !== null && key !== '') return orderingKeyPage(ctx, view, key);
  const { rows, next } = await readRecentEvents(ctx.rt, {
    before: view.query.get('before') ?? undefined,
    limit: PAGE_SIZE,
  });
  const body = html`
${
  rows.length === 0
    ? html`<p class="muted">No events recorded.</p>`
    : html`<table class="events"><thead><tr><th>sequence</th><th>event</th><th>id</th><th>ordering key</th><th>recorded</th><th>actor</th></tr></thead><tbody>
${rows.map((e) => html`<tr><td class="num">${e.sequence}</td><td>${e.name}</td><td>${eventLink(view, e.id)}</td><td>${keyLink(view, e.orderingKey)}</td><td>${time(e.recordedAt)}</td><td>${e.actor ?? html`<span class="muted">–</span>`}</td></tr>`)}</tbody></table>`
}
${pager(view, 'before', next)}`;
  return page(view, 'Events, newest first', body);
}

/** The live rows (owed or dead) of one ordering key: why the key is (or is not) stuck. */
async function orderingKeyPage(ctx: PageContext, view: View, key: string): Promise<string> {
  const rows = await readOrderingKeyRows(ctx.rt, key, PAGE_SIZE + 1);
  const shown = rows.slice(0, PAGE_SIZE);
  const body = html`
<p>The rows of this key still owed or dead, oldest event first, per receiver: the first of a receiver holds the rest back. A key whose rows have all settled is holding nothing (look its events up by id).</p>
${
  shown.length === 0
    ? html`<p class="ok">Nothing owed or dead for this key: it is not stuck.</p>`
    : html`<table class="key-rows"><thead><tr><th>row</th><th>receiver</th><th>event</th><th>status</th><th>attempts</th><th>available at</th><th>error</th><th></th></tr></thead><tbody>
${shown.map((r) => html`<tr><td class="mono">#${r.deliveryId}</td><td class="mono">${r.receiverKey}${r.target ? ` → ${r.target}` : ''}</td><td>${r.eventName}<br>${eventLink(view, r.eventId)}</td><td class="status ${r.status}">${r.status}</td><td class="num">${r.attempts}/${r.maxAttempts}</td><td>${time(r.availableAt)}</td><td class="error-cell">${r.lastError === null ? '' : errorBlock(r.lastError)}</td><td>${r.status === 'dead' ? actionForm(view, '/actions/requeue', 'requeue…', { id: r.deliveryId }) : r.status === 'claimed' ? '' : actionForm(view, '/actions/cancel', 'cancel…', { event: r.eventId, receiver: r.receiverKey, id: r.deliveryId }, { danger: true })}</td></tr>`)}</tbody></table>
${rows.length > PAGE_SIZE ? html`<p class="muted">The first ${PAGE_SIZE} rows; the rest wait behind them.</p>` : ''}`
}`;
  return page(view, `Ordering key ${key}`, body);
}

/** `/events/<uuid>`: one event whole, its causes, and each delivery row's history. */
export async function eventPage(
  ctx: PageContext,
  view: View,
  uuid: string,
): Promise<string | undefined> {
  const event = await readEventByUuid(ctx.rt, uuid);
  if (!event) return undefined;
  const [chain, deliveries] = await Promise.all([
    readCauseChain(ctx.rt, event),
    readDeliveriesOfEvent(ctx.rt, event.sequence),
  ]);
  const headerRows = Object.entries(event.headers).sort(([a], [b]) => (a < b ? -1 : 1));
  const body = html`
<dl class="facts">
  <dt>name</dt><dd>${event.name} <span class="muted">v${event.version}</span></dd>
  <dt>id</dt><dd class="mono">${event.id}</dd>
  <dt>sequence</dt><dd class="mono">${event.sequence}</dd>
  <dt>ordering key</dt><dd>${keyLink(view, event.orderingKey)}</dd>
  <dt>idempotency key</dt><dd class="mono">${event.idempotencyKey ?? html`<span class="muted">–</span>`}</dd>
  <dt>occurred</dt><dd>${time(event.occurredAt)}</dd>
  <dt>recorded</dt><dd>${time(event.recordedAt)}</dd>
  <dt>actor</dt><dd>${event.actor ?? html`<span class="muted">–</span>`}</dd>
  <dt>correlation id</dt><dd class="mono">${event.correlationId ?? html`<span class="muted">–</span>`}</dd>
  ${event.suppressedReason !== null ? html`<dt>suppressed</dt><dd>${event.suppressedReason}</dd>` : ''}
  <dt>retention</dt><dd>${event.deleteWhen ? `deleted once ${event.deleteWhen}` : event.retentionSeconds !== null ? `${event.retentionSeconds} s` : 'the outbox’s retentionDays'}</dd>
</dl>
${actionForm(view, '/actions/replay', 'replay this event…', { event: event.id })}
${deliveries.some((d) => d.status === 'pending' || d.status === 'failed') ? actionForm(view, '/actions/cancel', 'cancel its owed deliveries…', { event: event.id }, { danger: true }) : ''}
<h2>Payload</h2>
<div data-testid="payload">${jsonBlock(event.payload)}</div>
<h2>Headers</h2>
${
  headerRows.length === 0
    ? html`<p class="muted">none</p>`
    : html`<table class="headers"><tbody>${headerRows.map(([k, v]) => html`<tr><th class="mono">${k}</th><td class="mono">${isSecretHeader(k) ? '***' : redactSecrets(typeof v === 'string' ? v : JSON.stringify(v))}</td></tr>`)}</tbody></table>`
}
<h2>Caused by</h2>
${
  chain.length === 0
    ? html`<p class="muted">${event.causedBy === null ? 'Nothing: it was fired outside any receiver.' : 'Its cause has been pruned.'}</p>`
    : html`<ol class="chain">${chain.map((c: ConsoleEvent) => html`<li>${c.name} ${eventLink(view, c.id)} <span class="muted">recorded</span> ${time(c.recordedAt)}${c.actor ? html` <span class="muted">by</span> ${c.actor}` : ''}</li>`)}</ol>`
}
<h2>Deliveries</h2>
${
  deliveries.length === 0
    ? html`<p class="muted">No delivery rows (no durable receiver, suppressed, or pruned).</p>`
    : html`<table class="deliveries"><thead><tr><th>row</th><th>receiver</th><th>status</th><th>attempts</th><th>history</th><th>last error</th><th></th></tr></thead><tbody>
${deliveries.map(
  (
    d,
  ) => html`<tr data-delivery="${d.id}"><td class="mono">#${d.id}</td><td class="mono">${d.receiverKey}${d.target ? ` → ${d.target}` : ''}</td><td class="status ${d.status}" data-testid="status-${d.id}">${d.status}</td><td class="num">${d.attempts}/${d.maxAttempts}</td><td><ul class="history">
${d.dueAt ? html`<li>due ${time(d.dueAt)}</li>` : ''}<li>available ${time(d.availableAt)}</li>
${d.claimedBy ? html`<li>claimed by <span class="mono">${d.claimedBy}</span> ${time(d.claimedAt)}${d.leaseUntil ? html`, lease until ${time(d.leaseUntil)}` : ''}</li>` : ''}
${d.succeededAt ? html`<li>succeeded ${time(d.succeededAt)}</li>` : ''}
${d.completedAt && d.status !== 'succeeded' ? html`<li>${d.status} ${time(d.completedAt)}</li>` : ''}</ul></td><td class="error-cell">${d.lastError === null ? '' : errorBlock(d.lastError)}</td><td>${d.status === 'dead' ? actionForm(view, '/actions/requeue', 'requeue…', { id: d.id }) : ''}${d.status === 'pending' || d.status === 'failed' ? actionForm(view, '/actions/cancel', 'cancel…', { event: event.id, receiver: d.receiverKey, id: d.id }, { danger: true }) : ''}</td></tr>`,
)}</tbody></table>`
}`;
  return page(view, `${event.name} ${event.id}`, body);
}

/** `/quiet`: the durable receivers with no success inside the window. */
export async function quietPage(ctx: PageContext, view: View): Promise<string> {
  const days = Number(view.query.get('days') ?? '');
  const within = Number.isFinite(days) && days > 0 && days <= 3650 ? { days } : undefined;
  const quiet = await ctx.outbox.quietReceivers({ within, now: view.now });
  const { rows, pager: nav } = pageOf(view, quiet, PAGE_SIZE);
  const body = html`
<form method="get" action="${href(view, '/quiet')}" class="filter"><label>quiet for at least <input name="days" type="number" min="1" max="3650" value="${within ? String(days) : String(ctx.rt.config.settings.retentionDays)}"> days</label> <button type="submit">show</button></form>
${
  rows.length === 0
    ? html`<p class="ok">Every durable receiver succeeded inside the window.</p>`
    : html`<table class="quiet"><thead><tr><th>receiver</th><th>event</th><th>lane</th><th>last succeeded</th></tr></thead><tbody>
${rows.map((q) => html`<tr><td class="mono">${q.receiverKey}</td><td>${q.event ?? html`<span class="muted">(wildcard)</span>`}</td><td>${ctx.rt.config.receiver(q.receiverKey)?.lane ?? ''}</td><td>${q.lastSucceededAt ? html`${time(q.lastSucceededAt)} <span class="muted">(${age(view.now.getTime() - q.lastSucceededAt.getTime())} ago)</span>` : html`<strong>never</strong>`}</td></tr>`)}</tbody></table>`
}${nav}`;
  return page(view, 'Quiet receivers', body);
}

/** `/catalogue`: the declared events, their receivers, schemas and versions. */
export function cataloguePage(ctx: PageContext, view: View): string {
  const catalogue = ctx.outbox.catalogue();
  const { rows, pager: nav } = pageOf(view, catalogue.events, 20);
  const receiverCells = (r: (typeof catalogue.wildcardReceivers)[number]): SafeHtml =>
    html`<li><span class="mono">${r.key}</span> <span class="muted">${r.mode}, ${r.kind}${r.transport ? ` (${r.transport})` : ''}, lane ${r.lane}</span></li>`;
  const body = html`
<p>${catalogue.events.length} events, ${catalogue.wildcardReceivers.length} wildcard receivers. <a href="${href(view, '/catalogue/asyncapi.json')}" download="asyncapi.json">AsyncAPI 3.0 document (JSON)</a></p>
${rows.map(
  (
    e,
  ) => html`<section class="catalogue-event"><h2 class="mono">${e.name} <span class="muted">v${e.version}</span></h2>
${e.description ? html`<p>${e.description}</p>` : ''}
<table class="fields"><thead><tr><th>field</th><th>type</th><th>required</th><th>description</th></tr></thead><tbody>${e.fields.map((f) => html`<tr><td class="mono">${f.name}</td><td class="mono">${f.type}</td><td>${f.required ? 'yes' : 'no'}</td><td>${f.description ?? ''}</td></tr>`)}</tbody></table>
<p>Receivers:</p>${e.receivers.length === 0 ? html`<p class="muted">none (only wildcards, if any)</p>` : html`<ul>${e.receivers.map(receiverCells)}</ul>`}
<details><summary>JSON Schema</summary>${jsonBlock(e.schema)}</details></section>`,
)}
${nav}
${catalogue.wildcardReceivers.length > 0 ? html`<h2>Wildcard receivers</h2><ul>${catalogue.wildcardReceivers.map((r) => html`<li><span class="mono">${r.key}</span> for <span class="mono">${r.pattern ?? 'every event'}</span> <span class="muted">${r.mode}, ${r.kind}${r.transport ? ` (${r.transport})` : ''}, lane ${r.lane}</span></li>`)}</ul>` : ''}`;
  return page(view, 'Catalogue', body);
}

/** A page that says what went wrong, escaped (`redact`: an error's text, secrets redacted). */
export function messagePage(view: View, heading: string, message: string, redact = false): string {
  return page(
    view,
    heading,
    html`<p class="message">${redact ? redactSecrets(message) : message}</p><p><a href="${href(view, '/')}">back to the health page</a></p>`,
  );
}
