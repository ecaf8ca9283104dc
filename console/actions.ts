/**
 * The console's three actions — requeue dead letters, replay an event, cancel owed
 * deliveries — each in two steps: a confirmation page that says what would change
 * (counted, never done), then the act. The act calls the very functions the CLI's
 * `requeue-dead`, `replay` and `cancel` call (`outbox.requeueDead`, `replayEvents`,
 * `cancelDeliveries`), inside ONE transaction that also carries the audit hook's write,
 * so a change is recorded with who made it or not made at all; the outbox's logger gets
 * one line per act, naming the actor.
 */
import type { Transaction } from 'sequelize';
import { OutboxError } from '../src/errors/outbox-error.js';
import { inOperationTransaction } from '../src/ops/in-transaction.js';
import type { Outbox } from '../src/outbox.js';
import type { Runtime } from '../src/runtime.js';
import { html, type SafeHtml } from './html.js';
import { hidden, href, page, type View } from './layout.js';
import { readDeliveriesOfEvent, readEventByUuid, uuidOf } from './reads.js';

/** What an action did, as the audit hook and the log line are told. */
export interface ConsoleAuditEntry {
  /** When it was done (the outbox's clock). */
  readonly at: Date;
  /** Who did it: the name given at sign-in, or the actor `authorize()` returned. */
  readonly actor: string;
  /** The peer's address, as the socket saw it. */
  readonly remoteAddress: string | undefined;
  /** Which action. */
  readonly action: 'requeue' | 'replay' | 'cancel';
  /** What it was asked to touch (the form's fields, checked). */
  readonly scope: Readonly<Record<string, string | readonly string[]>>;
  /** What it changed: the operation's own result. */
  readonly result: Readonly<Record<string, unknown>>;
}

/**
 * Told of every action inside its transaction, before it commits: write your own audit row
 * with `transaction`, and a throw rolls the action back (the console then shows the error).
 */
export type ConsoleAuditHook = (
  entry: ConsoleAuditEntry,
  transaction: Transaction,
) => void | Promise<void>;

/** An action's form, checked: a refusal to show, or what to do. */
type Checked<T> = { readonly refusal: string } | { readonly scope: T };

/** The fields of a posted form (the last value of each name, and every value of a list). */
export type FormFields = URLSearchParams;

/** What an action runs with. */
export interface ActionContext {
  readonly outbox: Outbox;
  readonly rt: Runtime;
  readonly audit: ConsoleAuditHook | undefined;
  readonly actor: string;
  readonly remoteAddress: string | undefined;
}

/** An action's answer: a page and its status. */
export interface ActionAnswer {
  readonly status: number;
  readonly body: string;
}

const field = (form: FormFields, name: string) => {
  const v = form.get(name)?.trim();
  return v === undefined || v === '' ? undefined : v;
};

/** The confirm step's form: the same fields, `confirm=yes`, the CSRF token. */
function confirmForm(
  view: View,
  path: string,
  fields: Record<string, string | undefined>,
  label: string,
): SafeHtml {
  return html`<form method="post" action="${href(view, path)}" class="confirm">
${Object.entries(fields).map(([k, v]) => hidden(k, v))}${hidden('confirm', 'yes')}${hidden('csrf', view.csrf)}
<button type="submit" class="danger" data-testid="confirm">${label}</button> <a href="${href(view, '/')}">cancel, change nothing</a></form>`;
}

/** Run `work` and the audit hook in one transaction, then log the act. */
async function audited<T extends Record<string, unknown>>(
  ctx: ActionContext,
  action: ConsoleAuditEntry['action'],
  scope: ConsoleAuditEntry['scope'],
  work: (transaction: Transaction) => Promise<T>,
): Promise<T> {
  const result = await inOperationTransaction(ctx.rt, null, async (transaction) => {
    const done = await work(transaction);
    const entry: ConsoleAuditEntry = {
      at: ctx.rt.clock(),
      actor: ctx.actor,
      remoteAddress: ctx.remoteAddress,
      action,
      scope,
      result: done,
    };
    await ctx.audit?.(entry, transaction);
    return done;
  });
  ctx.rt.logger.info(`console: ${ctx.actor} ran ${action}`, {
    actor: ctx.actor,
    action,
    scope,
    result,
    remoteAddress: ctx.remoteAddress,
  });
  return result;
}

// --- requeue ---------------------------------------------------------------------------

interface RequeueScope {
  readonly id?: string;
  readonly receiver?: string;
  readonly topic?: string;
}

function checkRequeue(rt: Runtime, form: FormFields): Checked<RequeueScope> {
  const id = field(form, 'id');
  const receiver = field(form, 'receiver');
  const topic = field(form, 'topic');
  if (id !== undefined && !/^[1-9]\d{0,18}$/.test(id))
    return { refusal: `"${id}" is not a delivery id` };
  if (receiver !== undefined && rt.config.receiver(receiver)?.mode !== 'durable')
    return { refusal: `"${receiver}" is not a durable receiver of this outbox` };
  if (id === undefined && receiver === undefined && topic === undefined)
    return { refusal: 'name what to requeue: a dead letter, a receiver, or a topic' };
  return { scope: { id, receiver, topic } };
}

const requeueOptions = (s: RequeueScope) => ({
  deliveryIds: s.id === undefined ? undefined : [s.id],
  receiverKey: s.receiver,
  topics: s.topic === undefined ? undefined : [s.topic],
});

const describeRequeue = (s: RequeueScope): SafeHtml =>
  html`${s.id !== undefined ? html`dead letter <span class="mono">#${s.id}</span>` : 'the dead letters'}${s.receiver !== undefined ? html` of receiver <span class="mono">${s.receiver}</span>` : ''}${s.topic !== undefined ? html` whose topic is <span class="mono">${s.topic}</span>` : ''}`;

/** `POST /actions/requeue`: confirm, then requeue (pending, attempts 0, owed from now). */
export async function requeueAction(
  ctx: ActionContext,
  view: View,
  form: FormFields,
): Promise<ActionAnswer> {
  const checked = checkRequeue(ctx.rt, form);
  if ('refusal' in checked) return refused(view, 'Requeue dead letters', checked.refusal);
  const s = checked.scope;
  return guard(view, 'Requeue dead letters', async () => {
    if (field(form, 'confirm') !== 'yes') {
      const count = await ctx.outbox.requeueDead({ ...requeueOptions(s), dryRun: true });
      const body =
        count === 0
          ? html`<p class="ok">Nothing to requeue: ${describeRequeue(s)} — none is dead now.</p>`
          : html`<p>Requeue <strong data-testid="count">${count}</strong> ${describeRequeue(s)}? Each becomes pending with its attempts at zero, owed from now; its last error stays readable until an attempt replaces it.</p>
${confirmForm(view, '/actions/requeue', { id: s.id, receiver: s.receiver, topic: s.topic }, `requeue ${count}`)}`;
      return { status: 200, body: page(view, 'Requeue dead letters', body) };
    }
    const result = await audited(ctx, 'requeue', scopeOf(s), async (transaction) => ({
      requeued: await ctx.outbox.requeueDead({ ...requeueOptions(s), transaction }),
    }));
    return done(
      view,
      'Requeued',
      html`<p data-testid="result">Requeued ${result.requeued} dead letter${result.requeued === 1 ? '' : 's'} (${describeRequeue(s)}). A relay delivers ${result.requeued === 1 ? 'it' : 'them'} at its next claim.</p>`,
    );
  });
}

// --- replay ----------------------------------------------------------------------------

interface EventScope {
  readonly event: string;
  readonly receiver?: string;
  readonly id?: string;
}

function checkEvent(rt: Runtime, form: FormFields): Checked<EventScope> {
  const raw = field(form, 'event');
  const event = raw === undefined ? undefined : uuidOf(raw);
  if (event === undefined) return { refusal: 'name the event by its id (a UUID)' };
  const receiver = field(form, 'receiver');
  if (receiver !== undefined && rt.config.receiver(receiver)?.mode !== 'durable')
    return { refusal: `"${receiver}" is not a durable receiver of this outbox` };
  const id = field(form, 'id');
  if (id !== undefined && !/^[1-9]\d{0,18}$/.test(id))
    return { refusal: `"${id}" is not a delivery id` };
  return { scope: { event, receiver, id } };
}

/** `POST /actions/replay`: confirm, then make the event owed again to its receivers. */
export async function replayAction(
  ctx: ActionContext,
  view: View,
  form: FormFields,
): Promise<ActionAnswer> {
  const checked = checkEvent(ctx.rt, form);
  if ('refusal' in checked) return refused(view, 'Replay an event', checked.refusal);
  const s = checked.scope;
  return guard(view, 'Replay an event', async () => {
    if (field(form, 'confirm') !== 'yes') {
      const event = await readEventByUuid(ctx.rt, s.event);
      if (!event)
        return refused(
          view,
          'Replay an event',
          `no event ${s.event} (never fired, or pruned)`,
          404,
        );
      const body = html`<p>Replay <strong>${event.name}</strong> <span class="mono">${event.id}</span> to ${s.receiver === undefined ? 'every durable receiver of it' : html`<span class="mono">${s.receiver}</span>`}? Its settled rows become pending again (attempts at zero), a durable receiver declared since gets a row, both owed from now; rows still owed are left as they are.</p>
${confirmForm(view, '/actions/replay', { event: s.event, receiver: s.receiver }, 'replay')}`;
      return { status: 200, body: page(view, 'Replay an event', body) };
    }
    const result = await audited(ctx, 'replay', scopeOf(s), async (transaction) => {
      const r = await ctx.outbox.replayEvents([s.event], {
        receiverKeys: s.receiver === undefined ? undefined : [s.receiver],
        transaction,
      });
      return { reopened: r.reopened, added: r.added, missing: r.missing };
    });
    return done(
      view,
      'Replayed',
      result.missing.length > 0
        ? html`<p data-testid="result">No event ${s.event}: never fired, or pruned since. Nothing changed.</p>`
        : html`<p data-testid="result">Replayed: ${result.reopened} row${result.reopened === 1 ? '' : 's'} reopened, ${result.added} added. <a href="${href(view, `/events/${s.event}`)}">see the event</a></p>`,
    );
  });
}

// --- cancel ----------------------------------------------------------------------------

/** `POST /actions/cancel`: confirm, then withdraw the event's pending and failed rows. */
export async function cancelAction(
  ctx: ActionContext,
  view: View,
  form: FormFields,
): Promise<ActionAnswer> {
  const checked = checkEvent(ctx.rt, form);
  if ('refusal' in checked) return refused(view, 'Cancel owed deliveries', checked.refusal);
  const s = checked.scope;
  return guard(view, 'Cancel owed deliveries', async () => {
    if (field(form, 'confirm') !== 'yes') {
      const event = await readEventByUuid(ctx.rt, s.event);
      if (!event)
        return refused(
          view,
          'Cancel owed deliveries',
          `no event ${s.event} (never fired, or pruned)`,
          404,
        );
      const rows = (await readDeliveriesOfEvent(ctx.rt, event.sequence)).filter(
        (d) =>
          (d.status === 'pending' || d.status === 'failed') &&
          (s.receiver === undefined || d.receiverKey === s.receiver) &&
          (s.id === undefined || d.id === s.id),
      );
      const body =
        rows.length === 0
          ? html`<p class="ok">Nothing to cancel: no pending or failed row in scope.</p>`
          : html`<p>Cancel <strong data-testid="count">${rows.length}</strong> owed deliver${rows.length === 1 ? 'y' : 'ies'} of <strong>${event.name}</strong> <span class="mono">${event.id}</span> (${rows.map((d) => html`<span class="mono">#${d.id} ${d.receiverKey}</span> `)})? They will never run. A claimed row is left to its worker.</p>
${confirmForm(view, '/actions/cancel', { event: s.event, receiver: s.receiver, id: s.id }, `cancel ${rows.length}`)}`;
      return { status: 200, body: page(view, 'Cancel owed deliveries', body) };
    }
    const result = await audited(ctx, 'cancel', scopeOf(s), async (transaction) => {
      const r = await ctx.outbox.cancelDeliveries([s.event], {
        receiverKey: s.receiver,
        deliveryIds: s.id === undefined ? undefined : [s.id],
        transaction,
      });
      return { cancelled: r.cancelled, inFlight: r.inFlight, missing: r.missing };
    });
    return done(
      view,
      'Cancelled',
      html`<p data-testid="result">Cancelled ${result.cancelled} deliver${result.cancelled === 1 ? 'y' : 'ies'}${result.inFlight > 0 ? html`; ${result.inFlight} claimed left to their worker` : ''}. <a href="${href(view, `/events/${s.event}`)}">see the event</a></p>`,
    );
  });
}

// --- shared ----------------------------------------------------------------------------

function scopeOf(scope: object): Record<string, string> {
  return Object.fromEntries(Object.entries(scope).filter(([, v]) => v !== undefined)) as Record<
    string,
    string
  >;
}

function refused(view: View, heading: string, message: string, status = 400): ActionAnswer {
  return {
    status,
    body: page(
      view,
      heading,
      html`<p class="message refusal">${message}</p><p><a href="${href(view, '/')}">back</a></p>`,
    ),
  };
}

function done(view: View, heading: string, body: SafeHtml): ActionAnswer {
  return {
    status: 200,
    body: page(
      view,
      heading,
      html`${body}<p><a href="${href(view, '/dead')}">dead letters</a> · <a href="${href(view, '/')}">health</a></p>`,
    ),
  };
}

/** An operation's refusal (a bad topic pattern, say) as a 400 page, not a crash. */
async function guard(
  view: View,
  heading: string,
  work: () => Promise<ActionAnswer>,
): Promise<ActionAnswer> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof OutboxError) return refused(view, heading, error.message);
    throw error;
  }
}
