import type { Transaction } from 'sequelize';
import type { ResolvedReceiver } from '../declare/define-outbox.js';
import type { FiringEvent } from '../declare/receiver.js';
import { ValidationError } from '../errors/outbox-error.js';
import type { DeliveryRowInput } from '../storage/store.js';
import { firingEventOf, rowlessContext } from './event-view.js';
import type { PlannedEvent, PreparedEvent } from './types.js';

/** The longest target the column holds. */
const MAX_TARGET = 255;

/** What planning may consult: the moment of the fire and the caller's transaction. */
export interface PlanContext {
  /** The moment `fire()` was called: the rows' `available_at`, and the floor of a due time. */
  readonly now: Date;
  /**
   * The caller's transaction, where a receiver's `targets` and `due` functions run (reading
   * the rows the change just wrote).
   */
  readonly transaction: Transaction;
  /** The call, for messages: `fire()`, or `fireMany()[i]`. */
  readonly where?: (index: number) => string;
}

/**
 * Step 2 of `fire()`: the delivery rows each event owes, computed inside the caller's
 * transaction: one row per durable receiver, owed at once with the blank target — or, for
 * a fan-out receiver, one row per target its `targets` function returns (none for an empty
 * answer), and for a scheduled receiver one row available at its due time.
 *
 * Both functions run here, in the caller's transaction, one event and receiver at a time
 * (a promise they return is awaited; a plain answer is not), so `fire()`'s transactional
 * contract is theirs: a throw (or an answer that is not a target, or not a time) fails
 * `fire()`, and the caller's change rolls back with the event. A fan-out that swallowed
 * the error and delivered to nobody would commit a change whose consequences silently
 * never happened.
 *
 * A duplicate of a stored idempotency key writes none of these rows (the store skips
 * them), so planning must not have effects of its own beyond reading.
 *
 * @throws {ValidationError} for a target that is not a non-empty string of at most 255
 * characters or a due time that is not a valid `Date`, naming the call, the receiver and
 * the event; and whatever the functions themselves throw.
 */
export async function planDeliveries(
  prepared: readonly PreparedEvent[],
  context: PlanContext,
): Promise<PlannedEvent[]> {
  const planned: PlannedEvent[] = [];
  for (let i = 0; i < prepared.length; i++) {
    const p = prepared[i];
    planned.push(
      p.route.schedules
        ? { ...p, deliveries: await scheduledRows(p, context, context.where?.(i) ?? 'fire()') }
        : {
            ...p,
            deliveries: p.route.durable.map((receiver) => ({
              receiverKey: receiver.key,
              target: '',
              maxAttempts: receiver.maxAttempts,
              availableAt: context.now,
              dueAt: null,
            })),
          },
    );
  }
  return planned;
}

/** The rows of an event some of whose durable receivers fan out or are scheduled. */
async function scheduledRows(
  p: PreparedEvent,
  context: PlanContext,
  where: string,
): Promise<DeliveryRowInput[]> {
  const event = firingEventOf(p);
  const deliveries: DeliveryRowInput[] = [];
  for (const receiver of p.route.durable) {
    if (receiver.targets) {
      for (const target of await resolveTargets(receiver, event, context, where)) {
        deliveries.push({
          receiverKey: receiver.key,
          target,
          maxAttempts: receiver.maxAttempts,
          availableAt: context.now,
          dueAt: null,
        });
      }
    } else {
      const dueAt = receiver.due ? await resolveDueAt(receiver, event, context.now, where) : null;
      deliveries.push({
        receiverKey: receiver.key,
        target: '',
        maxAttempts: receiver.maxAttempts,
        availableAt: dueAt ?? context.now,
        dueAt,
      });
    }
  }
  return deliveries;
}

/**
 * Call a fan-out receiver's `targets` and check its answer: each a non-empty string the
 * column holds, a target returned twice kept once (in first-returned order). Exported for
 * `replayEvents` (src/ops/replay.ts), which calls it again at replay time.
 */
export async function resolveTargets(
  receiver: ResolvedReceiver,
  event: FiringEvent,
  context: PlanContext,
  where: string,
): Promise<string[]> {
  let answer: unknown = receiver.targets?.(
    event,
    rowlessContext(receiver.key, context.transaction, event.tenant ?? null),
  );
  if (isThenable(answer)) answer = await answer;
  const culprit = `${where}: receiver ${receiver.key}'s targets for ${event.name}`;
  if (
    answer === null ||
    typeof answer !== 'object' ||
    typeof (answer as Iterable<unknown>)[Symbol.iterator] !== 'function'
  ) {
    throw new ValidationError(
      `${culprit} returned ${describe(answer)}; it must return an iterable of target strings (an empty one writes no row)`,
      { path: 'targets' },
    );
  }
  const seen = new Set<string>();
  for (const target of answer as Iterable<unknown>) {
    if (typeof target !== 'string' || target.length === 0 || target.length > MAX_TARGET) {
      throw new ValidationError(
        `${culprit} returned ${describe(target)}; every target must be a non-empty string of at most ${MAX_TARGET} characters`,
        { path: 'targets' },
      );
    }
    seen.add(target);
  }
  return [...seen];
}

/**
 * A scheduled receiver's due time: its delay counted from the event's `occurredAt`, or its
 * function's answer, and never earlier than `now` — a time already past (an event fired
 * with an old `occurredAt`) is due as soon as the row is written, and owed from then.
 * Exported for `replayEvents`, which resolves it again and writes the later of it and now.
 */
export async function resolveDueAt(
  receiver: ResolvedReceiver,
  event: FiringEvent,
  now: Date,
  where: string,
): Promise<Date> {
  const due = receiver.due;
  let at: Date;
  if (due?.kind === 'delay') {
    at = new Date(event.occurredAt.getTime() + due.seconds * 1000);
  } else {
    let answer: unknown = due?.at(event);
    if (isThenable(answer)) answer = await answer;
    const culprit = `${where}: receiver ${receiver.key}'s due for ${event.name}`;
    if (!(answer instanceof Date) || Number.isNaN(answer.getTime())) {
      throw new ValidationError(
        `${culprit} returned ${describe(answer)}; it must return a valid Date`,
        {
          path: 'due',
        },
      );
    }
    at = answer;
  }
  return at.getTime() < now.getTime() ? now : at;
}

function isThenable(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

function describe(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (value instanceof Date) return 'an invalid Date';
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  return `${typeof value} ${String(value)}`;
}
