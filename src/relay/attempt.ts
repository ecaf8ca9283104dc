import { decodeJson } from '../codec/json.js';
import type { ResolvedReceiver } from '../declare/define-outbox.js';
import type { JsonValue, OutboxEvent } from '../declare/types.js';
import { NotYet, PermanentFailure, RetryAfter } from '../errors/signals.js';
import type { Runtime } from '../runtime.js';
import type { ClaimedDelivery, Outcome } from '../storage/store.js';
import { backoffSeconds } from './backoff.js';

/** The longest error text stored in `last_error`. */
export const MAX_ERROR_LENGTH = 2000;

/**
 * Decode a claimed row's event: parse its JSON and run the declared schema over it, so a
 * payload that no longer round-trips fails here (an ordinary, counted failure) rather than
 * deep inside a receiver. A wildcard receiver of an event no longer declared gets it raw.
 */
export function decodeEvent(rt: Runtime, row: ClaimedDelivery): OutboxEvent {
  const e = row.event;
  const raw = decodeJson(e.payload);
  const schema = rt.config.route(e.name)?.event.schema;
  let payload: unknown = raw;
  if (schema) {
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(
        `stored payload of ${e.name} v${e.version} (event ${e.uuid}) no longer decodes: ${issue.path.join('.') || 'payload'} ${issue.message}`,
      );
    }
    payload = parsed.data;
  }
  return {
    id: e.uuid,
    sequence: e.sequence,
    name: e.name,
    version: e.version,
    payload,
    headers: (decodeJson(e.headers) ?? {}) as Record<string, JsonValue>,
    orderingKey: e.orderingKey,
    idempotencyKey: e.idempotencyKey,
    occurredAt: e.occurredAt,
    recordedAt: e.recordedAt,
  };
}

/** The text stored for a failure: the message, with the cause's, truncated to the column. */
export function errorText(error: unknown): string {
  let text: string;
  if (error instanceof Error) {
    text = `${error.name}: ${error.message}`;
    if (error.cause instanceof Error)
      text += ` (caused by ${error.cause.name}: ${error.cause.message})`;
  } else {
    text = String(error);
  }
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}

/**
 * Decide what a failed attempt records. `PermanentFailure` dead-letters at once; a spent
 * budget dead-letters; `RetryAfter` schedules the next attempt when the destination asked
 * (capped, counted); `NotYet` moves the row to its time without spending an attempt; any
 * other error waits a full-jitter backoff.
 */
export function failureOutcome(
  rt: Runtime,
  row: ClaimedDelivery,
  receiver: ResolvedReceiver | undefined,
  error: unknown,
  now: Date,
): Outcome {
  if (error instanceof NotYet) {
    return {
      id: row.id,
      status: 'pending',
      attempts: row.attempts,
      availableAt: error.until,
      dueAt: error.until,
      lastError: null,
      completedAt: null,
    };
  }
  const attempts = row.attempts + 1;
  const lastError = errorText(error);
  if (error instanceof PermanentFailure || attempts >= row.maxAttempts) {
    return { id: row.id, status: 'dead', attempts, availableAt: null, lastError, completedAt: now };
  }
  let delaySeconds: number;
  if (error instanceof RetryAfter) {
    const cap = rt.config.settings.maxRetryAfterSeconds;
    if (error.seconds > cap) {
      rt.logger.warn(
        `receiver ${row.receiverKey} asked to retry after ${error.seconds}s; clamped to settings.maxRetryAfterSeconds (${cap}s)`,
      );
    }
    delaySeconds = Math.min(error.seconds, cap);
  } else {
    const s = rt.config.settings.backoff;
    delaySeconds = backoffSeconds(attempts, {
      base: receiver?.backoff.baseSeconds ?? s.baseSeconds,
      cap: receiver?.backoff.capSeconds ?? s.capSeconds,
      jitter: rt.jitter(),
    });
  }
  return {
    id: row.id,
    status: 'failed',
    attempts,
    availableAt: new Date(now.getTime() + delaySeconds * 1000),
    lastError,
    completedAt: null,
  };
}

/** Run `work` with a time limit; the timer is cleared either way. */
export async function withTimeout<T>(work: Promise<T>, seconds: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} timed out after ${seconds}s`)),
      seconds * 1000,
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
