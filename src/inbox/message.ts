import { ValidationError } from '../errors/outbox-error.js';

/**
 * A message as the inbox reads it: the event id it deduplicates on, and the topic it
 * records beside it (for a person reading the table; never part of the key). A plain
 * object, or what `fromKafka`, `fromRabbitmq`, `fromRedisStreams` and `fromWebhook` read
 * off a broker's message.
 */
export interface InboxMessage {
  /**
   * The event's id: the `outbox-event-id` header of a message our transports send (the
   * event's UUIDv7), or any producer's stable id for the message. At most 255 characters.
   */
  readonly id: string;
  /** The event's topic (its name), recorded beside the id. @defaultValue none */
  readonly topic?: string | null;
}

/** The longest event id or topic the inbox's `varchar(255)` columns hold. */
export const INBOX_TEXT_MAX = 255;

/**
 * The message checked: a non-empty id (and topic, when given) of at most 255 characters.
 * `where` names the call for the message (`inbox.handle`, `fromKafka`).
 * @throws {ValidationError} naming what is missing or wrong, before anything is written.
 */
export function checkMessage(
  where: string,
  message: unknown,
): { id: string; topic: string | null } {
  if (typeof message !== 'object' || message === null) {
    throw new ValidationError(
      `${where}(message) needs a message such as { id: event id, topic? } (got ${describe(message)}); read a broker's message with fromKafka, fromRabbitmq, fromRedisStreams or fromWebhook`,
      { path: 'message' },
    );
  }
  const { id, topic } = message as { id?: unknown; topic?: unknown };
  if (typeof id !== 'string' || id.trim() === '') {
    throw new ValidationError(
      `${where}(message): the message has no event id (message.id is ${describe(id)}); an outboxkit transport sends it as the outbox-event-id header, so a message without one was not sent by one (or lost its headers on the way)`,
      { path: 'message.id' },
    );
  }
  if (id.length > INBOX_TEXT_MAX) {
    throw new ValidationError(
      `${where}(message): message.id is ${id.length} characters; the inbox keeps ids of at most ${INBOX_TEXT_MAX}`,
      { path: 'message.id' },
    );
  }
  if (topic !== undefined && topic !== null) {
    if (typeof topic !== 'string' || topic.length > INBOX_TEXT_MAX) {
      throw new ValidationError(
        `${where}(message): message.topic must be a string of at most ${INBOX_TEXT_MAX} characters (got ${describe(topic)})`,
        { path: 'message.topic' },
      );
    }
  }
  return { id, topic: typeof topic === 'string' ? topic : null };
}

/** A value named for a message, without printing a large one whole. */
export function describe(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'string')
    return value === '' ? 'an empty string' : JSON.stringify(value.slice(0, 60));
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}
