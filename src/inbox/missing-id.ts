import { ValidationError } from '../errors/outbox-error.js';
import { EVENT_ID_HEADER } from '../transports/message.js';

/**
 * The error of an adapter that found no event id: which adapter, where it looked, and why
 * a message lacks one — so the person reading it knows whether to fix the producer or the
 * consumer, and the message is never processed without a key to deduplicate on.
 */
export function missingEventId(where: string, lookedAt: string): ValidationError {
  return new ValidationError(
    `${where}: the message has no event id (${lookedAt}); outboxkit's transports send it as the ${EVENT_ID_HEADER} header, so this message was not sent by one, or its headers were dropped on the way. The inbox refuses it rather than process it with nothing to deduplicate on.`,
    { path: `headers.${EVENT_ID_HEADER}` },
  );
}

/** The names of the headers a message has, for an error message (never their values). */
export function headerNames(headers: Readonly<Record<string, unknown>> | null | undefined): string {
  const names = headers && typeof headers === 'object' ? Object.keys(headers) : [];
  return names.length === 0 ? 'it has no headers' : `its headers: ${names.slice(0, 20).join(', ')}`;
}
