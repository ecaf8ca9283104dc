import { closestName } from '../declare/config-path.js';
import {
  type OutboxConfig,
  type ResolvedReceiver,
  topicPatternProblem,
} from '../declare/define-outbox.js';
import type { EventDefinition } from '../declare/event.js';
import type { TopicPattern } from '../declare/receiver.js';
import { AnyEvent } from '../declare/types.js';
import { ValidationError } from '../errors/outbox-error.js';

/**
 * Every receiver declared for one event, sorted by key — without the wildcards.
 *
 * A wildcard (a receiver declared for `AnyEvent` or for a topic pattern such as
 * `'library.*'`) receives this event as it receives every other it matches, and listing a
 * transport under every event answers the question two hundred times without saying
 * anything about this one. Ask for them directly:
 *
 * - `whatListensTo(config, AnyEvent)` returns every wildcard, the pattern ones included
 *   (each says what it was declared for in `pattern`);
 * - `whatListensTo(config, 'library.*')` returns the receivers declared for exactly that
 *   pattern — the same text, not every pattern that overlaps it — because that is the
 *   question the config can answer with no guessing: a pattern is a declaration, like an
 *   event name, and the receivers that share it are the ones a reader finds beside it.
 *
 * @param event an event's name, its `event(...)` definition, a topic pattern, or `AnyEvent`.
 * @throws {ValidationError} for a name (or definition) the config does not declare, and
 * for a pattern no receiver is declared for (or that is not a pattern), so a typo is not
 * read as "nothing listens".
 */
export function whatListensTo(
  config: OutboxConfig,
  event: string | TopicPattern | EventDefinition | AnyEvent,
): ResolvedReceiver[] {
  let mine: ResolvedReceiver[];
  if (event === AnyEvent) {
    mine = config.receivers.filter((r) => r.wildcard);
  } else if (typeof event === 'string' && !config.route(event) && isPatternText(event)) {
    mine = config.receivers.filter((r) => r.pattern === checkedPattern(config, event));
  } else {
    const name = eventName(config, event);
    mine = config.receivers.filter((r) => !r.wildcard && r.event === name);
  }
  return mine.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * The name of the event one receiver is declared for, or undefined.
 *
 * The direction an operator needs: a dead-letter row names a receiver key, and the next
 * question is what it was supposed to be receiving. Undefined covers a key never declared
 * (or deleted since the row was written) and a wildcard — one declared for `AnyEvent` or
 * for a topic pattern — which is owed every event it matches and so names no single one:
 * its delivery row already says which event it was. The pattern is not returned in the
 * event's place, because the answer is read as an event name (and a pattern is not one);
 * `config.receiver(key)?.pattern` has it.
 */
export function listensFor(config: OutboxConfig, receiverKey: string): string | undefined {
  return config.receiver(receiverKey)?.event;
}

function isPatternText(text: string): boolean {
  return text.includes('*') || text.includes('?');
}

/** The pattern, checked: well formed, and declared by at least one receiver. */
function checkedPattern(config: OutboxConfig, pattern: string): string {
  const problem = topicPatternProblem(pattern);
  if (problem) throw new ValidationError(`whatListensTo: ${problem}`, { path: 'event' });
  const declared = [
    ...new Set(config.receivers.flatMap((r) => (r.pattern === undefined ? [] : [r.pattern]))),
  ].sort();
  if (!declared.includes(pattern)) {
    const hint = closestName(pattern, declared);
    throw new ValidationError(
      `whatListensTo: no receiver is declared for the topic pattern "${pattern}"${
        hint
          ? ` — did you mean "${hint}"?`
          : declared.length
            ? ` (declared patterns: ${declared.map((p) => `"${p}"`).join(', ')})`
            : ' (no receiver is declared for a pattern)'
      }`,
      { path: 'event' },
    );
  }
  return pattern;
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
