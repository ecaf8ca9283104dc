/**
 * `outbox.replayEvents(events, options)`: make these events owed again, and report what
 * changed.
 *
 * The receiver set freezes at fire time, so deploying a new receiver does not hand it a
 * backlog of week-old events. That is deliberate, and this is the other half of it: replay
 * is an operation somebody invokes, with a name, not an accident of a deploy. Two things
 * happen, counted apart because they are different decisions:
 *
 * - **reopened**: a settled row (succeeded, dead, orphaned, cancelled) becomes pending
 *   again, its attempts at zero and its error cleared — it ran, and you want it to run again;
 * - **added**: a durable receiver of the event (from the config as it is now) with no row
 *   for it gets one, with its own `maxAttempts` — it did not exist when the event fired,
 *   and you are choosing to give it the backlog.
 *
 * Both are owed from the replay: `due_at` (and `available_at`) is the moment of the
 * replay, which is what a receiver's `giveUpAfter` is measured from — measuring from the
 * event's own time would dead-letter a replayed month-old event on its first deferral. A
 * receiver declared with `due` is the exception: its due time is resolved again, through
 * the resolver `fire()` uses (src/fire/plan.ts), and the later of that and now is written,
 * so a replay adopts a scheduled receiver without expiring every open offer at once.
 *
 * A fan-out receiver (`targets`) has its function called again, so a replay goes to the
 * targets that exist now: a target still returned is reopened or added as above; one no
 * longer returned is left as it was, neither reopened nor counted — including a blank row
 * written before the receiver gained `targets`. Calling `targets` or `due` means rebuilding
 * the event through THE decoder (src/codec/decode-event.ts), so a payload that no longer
 * decodes raises here, to the operator who asked; a plain receiver's reopened row would
 * dead-letter in the relay instead. Both functions run in the replay's transaction and a
 * throw rolls the whole replay back, as it would roll back a `fire()`.
 *
 * A row still owed is left alone: pending and failed rows already are, and reopening a
 * claimed one would hand the same work to two receivers. Rows of receivers the config no
 * longer declares durable for the event are left alone too: reopened, the relay would only
 * record them orphaned again.
 *
 * Once the replay commits (the caller's transaction, when it joined one), the relays are
 * woken with the replayed events' topics (src/ops/wake-relays.ts): a relay idle on a long
 * poll delivers them at once rather than at its next poll.
 *
 * CONCURRENCY: the events are locked first, in primary-key order (the lock cancel, requeue
 * and prune share), so a cancel issued during the replay waits for it and then withdraws
 * what it reopened, and two replays of one event never both add its missing rows.
 */

import type { Transaction } from 'sequelize';
import { decodeEvent } from '../codec/decode-event.js';
import type { OutboxConfig, ResolvedReceiver } from '../declare/define-outbox.js';
import type { EventColumnValue } from '../declare/event-columns.js';
import type { FiringEvent } from '../declare/receiver.js';
import type { DeliveryStatus } from '../declare/types.js';
import { ValidationError } from '../errors/outbox-error.js';
import { withColumns } from '../event-columns/store-io.js';
import { type PlanContext, resolveDueAt, resolveTargets } from '../fire/plan.js';
import type { Runtime } from '../runtime.js';
import type { Addition, DeliveryRow, Reopening } from '../storage/store.js';
import { scopedKey } from '../storage/tenant-keys.js';
import {
  columnsOption,
  describe,
  type EventIdentity,
  eventUuids,
  missingOf,
  ofColumns,
  ofTenant,
  tenantOption,
} from './arguments.js';
import { inOperationTransaction } from './in-transaction.js';
import { wakeRelaysOnCommit } from './wake-relays.js';

/** Options of {@link Outbox.replayEvents}. */
export interface ReplayEventsOptions {
  /**
   * Replay to these receivers only (keys of durable receivers): give a new receiver the
   * backlog without re-running the others. An empty list replays nothing.
   * @defaultValue every durable receiver of each event
   */
  readonly receiverKeys?: readonly string[];
  /**
   * Only this tenant's events (`settings.tenancy: 'column'`): an event of another tenant
   * is left untouched and reported among `missing`, as an id naming no event is, so an
   * operator working for one tenant cannot reach another's.
   * @defaultValue every tenant's
   */
  readonly tenant?: string;
  /**
   * Only events whose declared columns hold these values (`{ order_id: 42 }`; every one
   * named must match, `null` for none): another event is left untouched and reported among
   * `missing`, as one of another tenant is. @defaultValue every event
   */
  readonly columns?: Readonly<Record<string, EventColumnValue>>;
  /**
   * The transaction to join (else the one Sequelize's CLS carries; else its own). `targets`
   * and `due` functions run in it.
   */
  readonly transaction?: Transaction | null;
}

/** What {@link Outbox.replayEvents} did. */
export interface ReplayResult {
  /** Settled rows made pending again. */
  readonly reopened: number;
  /** Rows written for receivers (or targets) the events had none for. */
  readonly added: number;
  /** The ids given that name no event (never fired, or pruned since), in the order given. */
  readonly missing: readonly string[];
}

/** The statuses a replay reopens. */
const SETTLED: ReadonlySet<DeliveryStatus> = new Set([
  'succeeded',
  'dead',
  'orphaned',
  'cancelled',
]);

/** `outbox.replayEvents()`: see the module comment. Validates before any statement. */
export async function replayEvents(
  rt: Runtime,
  events: readonly EventIdentity[],
  options: ReplayEventsOptions = {},
): Promise<ReplayResult> {
  const where = 'replayEvents()';
  const uuids = eventUuids(events, where);
  const keys = receiverKeysOption(rt.config, options.receiverKeys, where);
  const tenant = tenantOption(rt.config, options.tenant, where);
  const equal = columnsOption(rt.config, options.columns, where);
  if (uuids.length === 0) return { reopened: 0, added: 0, missing: [] };
  return inOperationTransaction(rt, options.transaction, async (transaction) => {
    const now = rt.clock();
    const locked = await ofColumns(
      rt,
      ofTenant(await rt.store.lockEvents({ uuids }, transaction), tenant),
      equal,
      transaction,
    );
    const missing = missingOf(uuids, locked);
    if (locked.length === 0 || keys?.size === 0) return { reopened: 0, added: 0, missing };
    const sequences = locked.map((e) => e.sequence);
    // With their columns (where declared): a replay's targets and due functions see the
    // event as fire's did.
    const stored = await withColumns(
      rt,
      await rt.store.readEvents({ sequences }, transaction),
      where,
      transaction,
    );
    const rows = await rt.store.readDeliveriesOfEvents(sequences, transaction);
    const context: PlanContext = { now, transaction };
    const reopen: Reopening[] = [];
    const add: Addition[] = [];
    /** The sequences of the events with a row reopened: their topics are woken. */
    const reopenedEvents = new Set<string>();
    for (const event of stored) {
      const existing = rowsByReceiverAndTarget(
        rows.filter((r) => r.eventSequence === event.sequence),
      );
      let firing: FiringEvent | undefined;
      const rebuilt = (): FiringEvent => {
        firing ??= withoutSequence(decodeEvent(rt.config, event));
        return firing;
      };
      for (const receiver of durableReceiversOf(rt.config, event.name)) {
        if (keys && !keys.has(receiver.key)) continue;
        for (const owed of await owedRows(receiver, rebuilt, context, where)) {
          const mine = existing.get(slot(receiver.key, owed.target));
          if (!mine) {
            add.push({
              eventSequence: event.sequence,
              // As fire() copies it: the stored form, the tenant's prefix included.
              orderingKey: scopedKey(event.tenant, event.orderingKey),
              receiverKey: receiver.key,
              target: owed.target,
              maxAttempts: receiver.maxAttempts,
              availableAt: owed.at,
              dueAt: owed.at,
            });
            continue;
          }
          for (const row of mine)
            if (SETTLED.has(row.status)) {
              reopen.push({ id: row.id, availableAt: owed.at, dueAt: owed.at });
              reopenedEvents.add(event.sequence);
            }
        }
      }
    }
    const reopened = await rt.store.reopenDeliveries(reopen, transaction);
    const added = await rt.store.addDeliveries(add, transaction);
    if (reopened + added > 0) {
      // Owed again: wake the relays once the replay commits, naming the events' topics.
      const replayed = new Set([...reopenedEvents, ...add.map((a) => a.eventSequence)]);
      const topics = stored.filter((e) => replayed.has(e.sequence)).map((e) => e.name);
      await wakeRelaysOnCommit(rt, transaction, topics);
    }
    return { reopened, added, missing };
  });
}

/**
 * The rows one receiver is owed for an event now, each with the time it is owed from:
 * one per target its `targets` returns (from now), or one blank-target row — from its due
 * time resolved again (never before now) for a scheduled receiver, else from now.
 */
async function owedRows(
  receiver: ResolvedReceiver,
  rebuilt: () => FiringEvent,
  context: PlanContext,
  where: string,
): Promise<{ target: string; at: Date }[]> {
  if (receiver.targets) {
    const targets = await resolveTargets(receiver, rebuilt(), context, where);
    return targets.map((target) => ({ target, at: context.now }));
  }
  const at = receiver.due
    ? await resolveDueAt(receiver, rebuilt(), context.now, where)
    : context.now;
  return [{ target: '', at }];
}

/**
 * The durable receivers of an event name, as the config declares them now: the route's
 * (named and wildcard receivers), or for a name no longer declared, the durable wildcards
 * that match it.
 */
function durableReceiversOf(config: OutboxConfig, name: string): readonly ResolvedReceiver[] {
  const route = config.route(name);
  if (route) return route.durable;
  return config.receivers.filter(
    (r) =>
      r.mode === 'durable' &&
      r.wildcard &&
      (r.pattern === undefined || name.startsWith(r.pattern.slice(0, -1))),
  );
}

const slot = (receiverKey: string, target: string) => `${receiverKey}\u0000${target}`;

function rowsByReceiverAndTarget(rows: readonly DeliveryRow[]): Map<string, DeliveryRow[]> {
  const map = new Map<string, DeliveryRow[]>();
  for (const row of rows) {
    const key = slot(row.receiverKey, row.target);
    const list = map.get(key);
    if (list) list.push(row);
    else map.set(key, [row]);
  }
  return map;
}

/** A decoded event as `targets` and `due` are handed it (`FiringEvent`: no sequence). */
function withoutSequence(event: ReturnType<typeof decodeEvent>): FiringEvent {
  const { sequence: _sequence, ...firing } = event;
  return firing;
}

/**
 * `receiverKeys`: undefined, or an array of keys of durable receivers.
 * @throws {ValidationError} naming an entry that is not one.
 */
function receiverKeysOption(
  config: OutboxConfig,
  keys: unknown,
  where: string,
): ReadonlySet<string> | undefined {
  if (keys === undefined) return undefined;
  if (!Array.isArray(keys)) {
    throw new ValidationError(
      `${where}: receiverKeys must be an array of receiver keys; got ${describe(keys)}`,
      { path: 'receiverKeys' },
    );
  }
  keys.forEach((key: unknown, i) => {
    const receiver = typeof key === 'string' ? config.receiver(key) : undefined;
    if (receiver?.mode !== 'durable') {
      const durable = config.receivers.filter((r) => r.mode === 'durable').map((r) => r.key);
      const shown = durable.slice(0, 10).join(', ') + (durable.length > 10 ? ', …' : '');
      throw new ValidationError(
        `${where}: receiverKeys[${i}] ${describe(key)} is not a durable receiver of this outbox${receiver ? ` (it is ${receiver.mode}: it has no rows)` : ''}; the durable receivers are: ${shown || 'none'}`,
        { path: `receiverKeys[${i}]` },
      );
    }
  });
  return new Set(keys as string[]);
}
