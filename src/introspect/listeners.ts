import { closestName } from '../declare/config-path.js';
import type { OutboxConfig, ResolvedReceiver } from '../declare/define-outbox.js';
import type { EventDefinition } from '../declare/event.js';
import { AnyEvent } from '../declare/types.js';
import { ValidationError } from '../errors/outbox-error.js';

/**
 * Every receiver declared for one event, sorted by key — without the wildcards.
 *
 * A receiver declared for `AnyEvent` receives this event as it receives every other, and
 * listing a transport under every event answers the question two hundred times without
 * saying anything about this one. Ask for them directly with `whatListensTo(config,
 * AnyEvent)`, which returns exactly those.
 *
 * @param event the event's name, its `event(...)` definition, or `AnyEvent`.
 * @throws {ValidationError} for a name (or definition) the config does not declare, so a
 * typo is not read as "nothing listens".
 */
export function whatListensTo(
  config: OutboxConfig,
  event: string | EventDefinition | AnyEvent,
): ResolvedReceiver[] {
  const mine =
    event === AnyEvent
      ? config.receivers.filter((r) => r.wildcard)
      : config.receivers.filter((r) => !r.wildcard && r.event === eventName(config, event));
  return mine.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * The name of the event one receiver is declared for, or undefined.
 *
 * The direction an operator needs: a dead-letter row names a receiver key, and the next
 * question is what it was supposed to be receiving. Undefined covers a key never declared
 * (or deleted since the row was written) and a wildcard, which is owed every event and so
 * names no single one — its delivery row already says which event it was.
 */
export function listensFor(config: OutboxConfig, receiverKey: string): string | undefined {
  return config.receiver(receiverKey)?.event;
}

function eventName(config: OutboxConfig, event: string | EventDefinition): string {
  if (typeof event === 'string') {
    if (config.route(event)) return event;
    const hint = closestName(
      event,
      config.eventList.map((e) => e.name),
    );
    throw new ValidationError(
      `whatListensTo: "${event}" is not a declared event${hint ? ` — did you mean "${hint}"?` : ''}`,
      { path: 'event' },
    );
  }
  for (const [name, definition] of Object.entries(config.events)) {
    if (definition === event) return name;
  }
  throw new ValidationError(
    'whatListensTo: that event definition is not registered in defineOutbox({ events })',
    { path: 'event' },
  );
}
