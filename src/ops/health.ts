/**
 * `outbox.health()`: whether the outbox is keeping up, in one value — the reference's
 * `outbox_health` / `OutboxHealth`. Counts and timestamps rather than rates: a rate needs
 * two samples and a place to keep the first, which is a metrics system's job; this is what
 * that system scrapes (`outbox.metrics()` reads its gauges from here).
 *
 * `quietReceivers()` answers whether a receiver is running; this answers whether the queue
 * is draining. They fail differently: a relay down for an hour leaves every receiver quiet
 * and the backlog climbing, a single wedged receiver has a backlog and everything else fine.
 */
import type { EventColumnValue } from '../declare/event-columns.js';
import { ValidationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import type { BacklogRow } from '../storage/store.js';
import { columnsOption, eventsOfColumns, tenantOption } from './arguments.js';

/** What one receiver is behind on (the reference's `ReceiverBacklog`). */
export interface ReceiverBacklog {
  readonly receiverKey: string;
  /** Its deliveries due and not settled: pending, failed or claimed, with their due time come. */
  readonly owed: number;
  /**
   * When its oldest still-owed delivery became owed, or null when nothing is owed; see
   * {@link OutboxHealth.oldestOwedAt} for what that is read from.
   */
  readonly oldestOwedAt: Date | null;
  /** Its deliveries whose due time has not come yet, which `owed` leaves out. */
  readonly scheduled: number;
  /**
   * How many of `owed` a worker holds right now. A receiver whose owed rows are all claimed
   * and none finishing is wedged (or outruns its lease), where the same total spread across
   * receivers is a relay at work.
   */
  readonly claimed: number;
  /** Its dead letters: each holds back the later events of its ordering key. */
  readonly dead: number;
}

/** Whether the outbox is keeping up (the reference's `OutboxHealth`). */
export interface OutboxHealth {
  /** The moment this was read at. */
  readonly at: Date;
  /**
   * Deliveries due and not yet settled: pending, failed or claimed, with their due time
   * come. A superset of what a relay can claim right now (a row in its backoff is owed and
   * not claimable), so this never reports an empty queue while work is outstanding. A
   * delivery scheduled for later is counted in {@link scheduled} instead: it is work that
   * has not arrived.
   */
  readonly owed: number;
  /**
   * When the oldest still-owed delivery became owed, or null when nothing is owed: its
   * `due_at` where the row has one (the due time of a receiver declared with `due`, or the
   * moment a replay, requeue or NotYet moved it), else its event's `recorded_at`.
   *
   * Never when it next becomes available: a failing delivery has its `available_at` pushed
   * ahead by the backoff, so an alert on that reads a negative age exactly while a receiver
   * fails. This rises for as long as work sits undone, which is what a threshold needs. A
   * receiver failing all the way to dead leaves the owed set, so watch {@link dead} too.
   */
  readonly oldestOwedAt: Date | null;
  /**
   * Claimed rows whose lease has expired. Steadily non-zero means workers die mid-delivery,
   * or a receiver outruns its lease and has its work thrown away every time (see the
   * receiver's `leaseSeconds`).
   */
  readonly lapsedLeases: number;
  /** How many of {@link owed} a worker holds right now. */
  readonly claimed: number;
  /**
   * Deliveries not yet settled whose due time is still ahead (a receiver declared with
   * `due`, a NotYet): not owed and not aged, so a backlog alert does not fire for work that
   * is on time.
   */
  readonly scheduled: number;
  /** Dead letters: deliveries that stopped on their own and wait for a person (requeueDead). */
  readonly dead: number;
  /**
   * Only the receivers with something owed, dead or scheduled, worst backlog first: the
   * most owed, then the oldest owed, then the most dead, then the most scheduled, then by key.
   */
  readonly receivers: readonly ReceiverBacklog[];
}

/** Options of {@link Outbox.health}. */
export interface HealthOptions {
  /** The moment to read the backlog at. @defaultValue the outbox's clock */
  readonly now?: Date;
  /**
   * Only this tenant's rows (`settings.tenancy: 'column'`): its backlog, its oldest owed
   * delivery, its dead letters. @defaultValue every tenant's
   */
  readonly tenant?: string;
  /**
   * Only the rows of events whose declared columns hold these values (`{ order_id: 42 }`;
   * every one named must match, `null` for none): one order's backlog.
   * @defaultValue every event's
   */
  readonly columns?: Readonly<Record<string, EventColumnValue>>;
}

/**
 * Read the health at `now`: one statement over the owed rows (the partial index
 * deliveries_queue, migration 4) and the dead ones, never over history (see
 * storage/sql/health.ts).
 * @throws {ValidationError} for a `now` that is not a valid Date.
 */
export async function outboxHealth(
  rt: Runtime,
  options: HealthOptions = {},
): Promise<OutboxHealth> {
  const now = checkedNow(options.now, 'health', rt);
  const tenant = tenantOption(rt.config, options.tenant, 'health()');
  const events = await eventsOfColumns(rt, columnsOption(rt.config, options.columns, 'health()'));
  const rows = await rt.store.readBacklog(now, {
    ...(tenant === undefined ? {} : { tenant }),
    ...(events === undefined ? {} : { events }),
  });
  return summarise(now, rows);
}

/** The totals and the ordered receivers of a backlog read. */
export function summarise(at: Date, rows: readonly BacklogRow[]): OutboxHealth {
  let owed = 0;
  let lapsedLeases = 0;
  let claimed = 0;
  let scheduled = 0;
  let dead = 0;
  let oldest: number | undefined;
  const receivers: ReceiverBacklog[] = [];
  for (const r of rows) {
    owed += r.owed;
    lapsedLeases += r.lapsed;
    claimed += r.claimed;
    scheduled += r.scheduled;
    dead += r.dead;
    const since = r.owed > 0 ? r.oldestOwedAt?.getTime() : undefined;
    if (since !== undefined && (oldest === undefined || since < oldest)) oldest = since;
    if (r.owed + r.dead + r.scheduled === 0) continue;
    receivers.push({
      receiverKey: r.receiverKey,
      owed: r.owed,
      oldestOwedAt: r.owed > 0 ? r.oldestOwedAt : null,
      scheduled: r.scheduled,
      claimed: r.claimed,
      dead: r.dead,
    });
  }
  receivers.sort(worstFirst);
  return {
    at,
    owed,
    oldestOwedAt: oldest === undefined ? null : new Date(oldest),
    lapsedLeases,
    claimed,
    scheduled,
    dead,
    receivers,
  };
}

/** Worst backlog first: most owed, oldest owed, most dead, most scheduled, then by key. */
function worstFirst(a: ReceiverBacklog, b: ReceiverBacklog): number {
  const oldest = (r: ReceiverBacklog) => r.oldestOwedAt?.getTime() ?? Number.POSITIVE_INFINITY;
  return (
    b.owed - a.owed ||
    oldest(a) - oldest(b) ||
    b.dead - a.dead ||
    b.scheduled - a.scheduled ||
    (a.receiverKey < b.receiverKey ? -1 : a.receiverKey > b.receiverKey ? 1 : 0)
  );
}

/** `options.now`, checked, or the outbox's clock. */
export function checkedNow(now: unknown, operation: string, rt: Runtime): Date {
  if (now === undefined) return rt.clock();
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) {
    throw new ValidationError(
      `outbox.${operation}({ now }) must be a valid Date (got ${now instanceof Date ? 'an invalid Date' : (JSON.stringify(now) ?? String(now))})`,
      { path: 'now' },
    );
  }
  return now;
}
