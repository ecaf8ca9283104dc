import type { Transaction } from 'sequelize';
import { v7 as uuidv7 } from 'uuid';
import { decodeJson, encodeJson } from '../codec/json.js';
import { closestName, formatConfigPath } from '../declare/config-path.js';
import type { EventRoute } from '../declare/define-outbox.js';
import type { JsonValue, OutboxEvent } from '../declare/types.js';
import { ValidationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import type { EventRowInput } from '../storage/store.js';
import { resolveTransaction } from './transaction.js';

const MAX_KEY = 255;

/** Options of `outbox.fire()`. */
export interface FireOptions {
  /**
   * The transaction of the change this event reports: the event commits with it or not at
   * all. Without it, the transaction Sequelize's CLS carries is used (if the app enabled
   * CLS); with neither, the event commits at once on its own.
   */
  readonly transaction?: Transaction | null;
  /**
   * At most one event ever exists per key. A repeat returns the stored event (its own
   * payload) and writes nothing — no error, no duplicate, no wakeup, and never an aborted
   * PostgreSQL transaction — so retrying a handler or re-running a job is safe.
   */
  readonly idempotencyKey?: string;
  /** Events of one ordering key are delivered to each receiver strictly in order. */
  readonly orderingKey?: string;
  /** Metadata besides the payload (a trace context, the author); names must be non-empty. */
  readonly headers?: Readonly<Record<string, JsonValue>>;
  /**
   * When the thing reported happened, the domain's own time.
   * @defaultValue now
   */
  readonly occurredAt?: Date;
}

/** One event of `outbox.fireMany()`. */
export interface FireMessage<N extends string = string, P = unknown>
  extends Omit<FireOptions, 'transaction'> {
  readonly name: N;
  readonly payload: P;
}

/** What `fire()` returns: the recorded event, and whether this call wrote it. */
export type FiredEvent<P = unknown> = OutboxEvent<P> & {
  /** True when an event with the same idempotency key already existed; nothing was written. */
  readonly duplicate: boolean;
};

interface Prepared {
  readonly route: EventRoute;
  readonly row: EventRowInput;
  readonly payload: unknown;
  readonly headers: Record<string, JsonValue>;
}

/** Validate and encode one message; throws before anything is written. */
function prepare(rt: Runtime, message: FireMessage, now: Date, where: string): Prepared {
  const route = rt.config.route(message.name);
  if (!route) {
    const hint = closestName(
      String(message.name),
      rt.config.eventList.map((e) => e.name),
    );
    throw new ValidationError(
      `${where}: unknown event ${JSON.stringify(message.name)}${hint ? ` — did you mean "${hint}"?` : ''}; declare it in defineOutbox({ events })`,
      { path: 'name' },
    );
  }
  const parsed = route.event.schema.safeParse(message.payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = formatConfigPath(['payload', ...issue.path]);
    const more =
      parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more)` : '';
    throw new ValidationError(
      `${where}: ${message.name} ${path} ${issue.message}${more}; nothing was written`,
      {
        path,
        cause: parsed.error,
      },
    );
  }
  const headers = (message.headers ?? {}) as Record<string, JsonValue>;
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) {
    throw new ValidationError(`${where}: headers must be an object of name → JSON value`, {
      path: 'headers',
    });
  }
  for (const name of Object.keys(headers)) {
    if (name.trim() === '') {
      throw new ValidationError(
        `${where}: headers has an empty name; every header needs a non-empty name`,
        { path: 'headers' },
      );
    }
  }
  checkKey(message.idempotencyKey, 'idempotencyKey', where);
  checkKey(message.orderingKey, 'orderingKey', where);
  const occurredAt = message.occurredAt ?? now;
  if (!(occurredAt instanceof Date) || Number.isNaN(occurredAt.getTime())) {
    throw new ValidationError(
      `${where}: occurredAt must be a valid Date (got ${String(message.occurredAt)})`,
      { path: 'occurredAt' },
    );
  }
  const retention = route.event.retention;
  if (
    message.idempotencyKey !== undefined &&
    (retention === 'succeeded' || retention === 'settled')
  ) {
    throw new ValidationError(
      `${where}: ${message.name} is deleted once consumed (retention "${retention}"), so an idempotencyKey would protect only until the prune; drop the key or keep the event for a window`,
      { path: 'idempotencyKey' },
    );
  }
  return {
    route,
    payload: parsed.data,
    headers,
    row: {
      uuid: uuidv7(),
      name: route.event.name,
      version: route.event.version,
      payload: encodeJson(parsed.data, 'payload'),
      headers: encodeJson(headers, 'headers'),
      orderingKey: message.orderingKey ?? null,
      idempotencyKey: message.idempotencyKey ?? null,
      occurredAt,
      recordedAt: now,
      retentionSeconds: typeof retention === 'object' ? Math.round(retention.days * 86_400) : null,
      deleteWhen: typeof retention === 'string' ? retention : null,
      deliveries: route.durable.map((r) => ({
        receiverKey: r.key,
        target: '',
        maxAttempts: r.maxAttempts,
        availableAt: now,
      })),
    },
  };
}

function checkKey(value: unknown, name: string, where: string): void {
  if (value === undefined) return;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_KEY) {
    throw new ValidationError(
      `${where}: ${name} must be a string of 1 to ${MAX_KEY} characters (got ${JSON.stringify(value)})`,
      {
        path: name,
      },
    );
  }
}

const pendingSignals = new WeakMap<Transaction, Set<string>>();

/**
 * Write events (and their delivery rows) in the caller's transaction, run inline receivers
 * in it, and arrange the after-commit work: onCommit receivers and one coalesced wakeup.
 *
 * Everything is validated before the first statement, so bad input writes nothing and
 * leaves the caller's transaction usable.
 */
export async function fireEvents(
  rt: Runtime,
  messages: readonly FireMessage[],
  explicit: Transaction | null | undefined,
  where: string,
): Promise<FiredEvent[]> {
  const now = rt.clock();
  const prepared = messages.map((m, i) =>
    prepare(rt, m, now, messages.length > 1 ? `${where}[${i}]` : where),
  );
  const transaction = resolveTransaction(rt.sequelize, explicit);
  if (transaction) return write(rt, prepared, transaction);
  return rt.sequelize.transaction((own) => write(rt, prepared, own));
}

async function write(
  rt: Runtime,
  prepared: readonly Prepared[],
  transaction: Transaction,
): Promise<FiredEvent[]> {
  if (prepared.length === 0) return [];
  const written = await rt.store.insertEvents(
    prepared.map((p) => p.row),
    transaction,
  );
  const results: FiredEvent[] = [];
  const duplicates: number[] = [];
  for (let i = 0; i < prepared.length; i++) {
    const p = prepared[i];
    const w = written[i];
    if (!w.inserted) {
      duplicates.push(i);
      results.push(undefined as unknown as FiredEvent);
      continue;
    }
    results.push({
      id: w.uuid,
      sequence: w.sequence,
      name: p.row.name,
      version: p.row.version,
      payload: p.payload,
      headers: p.headers,
      orderingKey: p.row.orderingKey,
      idempotencyKey: p.row.idempotencyKey,
      occurredAt: p.row.occurredAt,
      recordedAt: p.row.recordedAt,
      duplicate: false,
    });
  }
  if (duplicates.length > 0) {
    const stored = new Map(
      (
        await rt.store.readEvents(
          { sequences: duplicates.map((i) => written[i].sequence) },
          transaction,
        )
      ).map((e) => [e.sequence, e]),
    );
    for (const i of duplicates) {
      const e = stored.get(written[i].sequence);
      if (!e) throw new Error(`stored event ${written[i].sequence} vanished while firing`);
      const schema = rt.config.route(e.name)?.event.schema;
      const raw = decodeJson(e.payload);
      const decoded = schema?.safeParse(raw);
      results[i] = {
        id: e.uuid,
        sequence: e.sequence,
        name: e.name,
        version: e.version,
        payload: decoded?.success ? decoded.data : raw,
        headers: decodeJson(e.headers) as Record<string, JsonValue>,
        orderingKey: e.orderingKey,
        idempotencyKey: e.idempotencyKey,
        occurredAt: e.occurredAt,
        recordedAt: e.recordedAt,
        duplicate: true,
      };
    }
  }

  // Inline receivers run in the transaction, in firing order; a throw aborts it.
  for (let i = 0; i < prepared.length; i++) {
    if (results[i].duplicate) continue;
    for (const receiver of prepared[i].route.inline) {
      await receiver.handle!(results[i], {
        receiverKey: receiver.key,
        deliveryId: null,
        attempt: 1,
        target: '',
        transaction,
      });
    }
  }

  const fresh = results.filter((r) => !r.duplicate);
  if (fresh.length === 0) return results;
  const onCommit = prepared.flatMap((p, i) =>
    results[i].duplicate ? [] : p.route.onCommit.map((receiver) => [receiver, results[i]] as const),
  );
  if (onCommit.length > 0) {
    transaction.afterCommit(async () => {
      for (const [receiver, event] of onCommit) {
        try {
          await receiver.handle!(event, {
            receiverKey: receiver.key,
            deliveryId: null,
            attempt: 1,
            target: '',
          });
        } catch (error) {
          rt.logger.error(
            `onCommit receiver ${receiver.key} failed for ${event.name}; not retried (onCommit is best effort)`,
            {
              error,
            },
          );
          rt.events.emit('fire:onCommitFailed', {
            receiverKey: receiver.key,
            eventName: event.name,
            error,
          });
        }
      }
    });
  }
  const wakeup = rt.wakeup;
  if (
    wakeup &&
    !wakeup.notifyChannel &&
    prepared.some((p, i) => !results[i].duplicate && p.route.durable.length > 0)
  ) {
    let topics = pendingSignals.get(transaction);
    if (!topics) {
      topics = new Set();
      pendingSignals.set(transaction, topics);
      const collected = topics;
      transaction.afterCommit(() => wakeup.signal([...collected]));
    }
    for (const r of fresh) topics.add(r.name);
  }
  return results;
}
