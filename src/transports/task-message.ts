/**
 * What a task queue's job carries when the outbox fires a task through it (the
 * topic-outbox reference's `TaskiqDelivery`: `pgBossTransport`, `bullmqTransport`): the
 * event as every transport sends it (message.ts) — its id, topic, payload, headers and
 * ordering key — as one JSON object, since a job has data and no headers. The job's own id
 * is the event's id, so a repeat of the send is deduplicated by the queue.
 */
import type { JsonValue, OutboxEvent } from '../declare/types.js';
import { getBody, getHeaders, getKey } from './message.js';

/** The data of a job a task transport adds: the event, as a worker reads it. */
export interface TaskMessage {
  /** The event's id (UUIDv7): also the job's id, and what a worker deduplicates on. */
  readonly id: string;
  /** The event's name, its topic. */
  readonly topic: string;
  /** The payload, as the outbox's codec stored it (a `Date` as ISO text). */
  readonly payload: JsonValue;
  /** The message headers every transport sends (`outbox-event-id`, `outbox-topic`, a trace context). */
  readonly headers: Readonly<Record<string, string>>;
  /** The ordering key, or null. */
  readonly orderingKey: string | null;
}

/** The job data of an event. */
export function taskMessage(event: OutboxEvent): TaskMessage {
  return {
    id: event.id,
    topic: event.name,
    payload: JSON.parse(getBody(event)) as JsonValue,
    headers: getHeaders(event),
    orderingKey: getKey(event),
  };
}

/** A job's queue: a name, or a function of the event; checked for each event. */
export function queueOf(
  who: string,
  queue: string | ((event: OutboxEvent) => string) | undefined,
  event: OutboxEvent,
): string {
  const name = typeof queue === 'function' ? queue(event) : (queue ?? event.name);
  if (typeof name !== 'string' || !/^[\w.-]+$/.test(name)) {
    throw new Error(
      `${who}({ queue }) gave ${JSON.stringify(name)} for event ${event.id} (${event.name}); a queue name is letters, digits, _ . and -`,
    );
  }
  return name;
}
