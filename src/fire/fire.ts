import type { Transaction } from 'sequelize';
import { ValidationError } from '../errors/outbox-error.js';
import { type FireHeaders, fireHeadersOf } from '../observe/around-delivery.js';
import type { Runtime, TenantSchemas } from '../runtime.js';
import type { InsertOptions } from '../storage/store.js';
import { resolveTransaction } from '../transaction/join.js';
import { whenCommitted } from '../transaction/when-committed.js';
import { arrangeAfterCommit, freshDurableTopics, signalWhenCommitted } from './after-commit.js';
import { runInlineReceivers } from './inline.js';
import { outboxWriteError } from './missing-tables.js';
import { planDeliveries } from './plan.js';
import { prepareEvents } from './prepare.js';
import type { FiredEvent, FireMessage, PlannedEvent } from './types.js';
import { firedEventsOf, type Inserted, insertPlanned } from './write.js';

export type { FiredEvent, FireManyOptions, FireMessage, FireOptions } from './types.js';

/**
 * `fire()` and `fireMany()`, in four steps:
 *
 * 0. the outbox's `fireHeaders` (a trace context), read here in the caller's async context
 *    and put under each message's own headers;
 * 1. prepare (pure): validate and encode every message — bad input throws before the first
 *    statement, so it writes nothing and leaves the caller's transaction usable;
 * 2. plan, inside the caller's transaction: the delivery rows each event owes;
 * 3. write: the events and their rows in one store call (then `inline` receivers run in
 *    the transaction, where a throw aborts it);
 * 4. after commit: `onCommit` receivers and one coalesced wakeup signal, once the
 *    outermost transaction has really committed.
 */
export async function fireEvents(
  rt: Runtime,
  messages: readonly FireMessage[],
  explicit: Transaction | null | undefined,
  where: string,
  wakeup = true,
): Promise<FiredEvent[]> {
  return (await fireInTransaction(rt, messages, explicit, where, true, undefined, wakeup)) ?? [];
}

/**
 * `fireEvents` for a caller that reads no answer (change capture): the same four steps in
 * the same transaction, but the `FiredEvent` of each event — an object per event, 10,000
 * for a captured `bulkCreate` — is built only when a receiver runs in the process (an
 * `inline` or `onCommit` one, an `eager` attempt). Otherwise step 4 is the wakeup signal
 * alone, exactly what {@link arrangeAfterCommit} would arrange for those events.
 *
 * @param encoded per message, its payload already checked against its schema and encoded
 * by the caller (see `prepareEvents`), or undefined to have it parsed and encoded here.
 */
export async function fireUnanswered(
  rt: Runtime,
  messages: readonly FireMessage[],
  explicit: Transaction | null | undefined,
  where: string,
  encoded?: readonly (string | undefined)[],
): Promise<void> {
  await fireInTransaction(rt, messages, explicit, where, false, encoded);
}

/**
 * The four steps of {@link fireEvents}, in the caller's transaction or one of their own.
 * `answered: false` skips building the `FiredEvent`s where nothing in the process reads
 * them (see {@link fireUnanswered}), and then returns undefined.
 */
async function fireInTransaction(
  outboxRt: Runtime,
  messages: readonly FireMessage[],
  explicit: Transaction | null | undefined,
  where: string,
  answered: boolean,
  encoded?: readonly (string | undefined)[],
  wakeup = true,
): Promise<FiredEvent[] | undefined> {
  const now = outboxRt.clock();
  const prepared = prepareEvents(
    outboxRt.config,
    outboxRt.fireHeaders ? withFireHeaders(outboxRt, outboxRt.fireHeaders, messages) : messages,
    now,
    where,
    encoded,
  );
  const transaction = resolveTransaction(outboxRt.sequelize, explicit);
  if (prepared.length === 0) return [];
  // A schema per tenant: the events go to their tenant's schema (the store of its runtime).
  const rt =
    outboxRt.tenantSchemas && outboxRt.config.settings.tenancy === 'schema'
      ? tenantSchemaRuntime(outboxRt.tenantSchemas, prepared, where)
      : outboxRt;
  const inTransaction = async (t: Transaction): Promise<FiredEvent[] | undefined> => {
    const planned = await planDeliveries(prepared, {
      now,
      transaction: t,
      where: (i) => (messages.length > 1 ? `${where}[${i}]` : where),
    });
    // The NOTIFY this write carries (a `notifyInWrite` wakeup): none without a wakeup,
    // and under `notifyCoalesceMs` only the first write of an interval's (asked only when
    // the write owes something: a wake for nothing would spend the interval).
    const coalescer = rt.notifyCoalescer;
    const notify = wakeup && (!coalescer || (owesDurable(planned) && coalescer.admit()));
    let inserted: Inserted;
    try {
      inserted = await insertPlanned(rt, planned, t, notify ? undefined : NO_NOTIFY);
    } catch (error) {
      throw outboxWriteError(rt, where, error);
    }
    const topics = wakeup ? freshDurableTopics(planned, inserted) : [];
    // A write folded into an earlier NOTIFY is announced by the trailing one, once committed.
    if (coalescer && !notify && topics.length > 0) whenCommitted(t, () => coalescer.fold(topics));
    if (!answered && !planned.some(runsInProcess)) {
      if (topics.length > 0) signalWhenCommitted(rt, t, topics);
      return undefined;
    }
    const fired = firedEventsOf(rt, planned, inserted);
    await runInlineReceivers(planned, fired, t);
    arrangeAfterCommit(rt, planned, fired, t, topics);
    return fired;
  };
  return transaction ? inTransaction(transaction) : rt.sequelize.transaction(inTransaction);
}

/**
 * The runtime of the schema the events of one call are written to, under `settings.tenancy:
 * 'schema'`: their tenant's. Every event needs a tenant (the schema holds its keys, so an
 * event of no tenant has nowhere to go), and one call writes to one schema.
 * @throws {ValidationError} for an event without a tenant, or a call of two tenants.
 */
function tenantSchemaRuntime(
  schemas: TenantSchemas,
  prepared: readonly { readonly row: { readonly name: string; readonly tenant?: string | null } }[],
  where: string,
): Runtime {
  const tenant = prepared[0].row.tenant ?? null;
  for (const [i, p] of prepared.entries()) {
    const at = prepared.length > 1 ? `${where}[${i}]` : where;
    if ((p.row.tenant ?? null) === null) {
      throw new ValidationError(
        `${at}: ${p.row.name} names no tenant, but this outbox keeps a schema per tenant (settings.tenancy: 'schema'), so an event without one has no schema to go to; fire it inside withTenant(tenant, …) or with { tenant }; nothing was written`,
        { path: 'tenant' },
      );
    }
    if (p.row.tenant !== tenant) {
      throw new ValidationError(
        `${at}: ${p.row.name} is the tenant ${JSON.stringify(p.row.tenant)}'s, but the call's first event is ${JSON.stringify(tenant)}'s; under a schema per tenant one call writes to one tenant's schema, so fire each tenant's events in a call of their own; nothing was written`,
        { path: 'tenant' },
      );
    }
  }
  return schemas.runtimeOf(schemas.schemaOf(tenant as string));
}

/** The store's insert without its NOTIFY (see `InsertOptions.notify`). */
const NO_NOTIFY: InsertOptions = { notify: false };

/** Whether a write owes any durable receiver anything (what a wakeup announces). */
function owesDurable(planned: readonly PlannedEvent[]): boolean {
  return planned.some((p) => p.suppression === null && p.route.durable.length > 0);
}

/** Whether an event has a receiver that runs in this process: inline, onCommit or eager. */
function runsInProcess(p: PlannedEvent): boolean {
  return (
    p.route.inline.length > 0 ||
    p.route.onCommit.length > 0 ||
    p.route.durable.some((r) => r.eager === true)
  );
}

/**
 * The messages with the outbox's `fireHeaders` under their own (a message's header of the
 * same name wins): read once per call, in the caller's async context, where the active span
 * is the request's. The messages as given when the sources add nothing.
 */
function withFireHeaders(
  rt: Runtime,
  sources: readonly FireHeaders[],
  messages: readonly FireMessage[],
): readonly FireMessage[] {
  const added = fireHeadersOf(sources, rt.logger);
  if (!added) return messages;
  return messages.map((message) => {
    const own: unknown = message.headers;
    if (own === undefined || own === null) return { ...message, headers: added };
    // Headers that are no object are left for prepare to refuse, naming them.
    if (typeof own !== 'object' || Array.isArray(own)) return message;
    return { ...message, headers: { ...added, ...message.headers } };
  });
}
