/**
 * Relay topics (the topic-outbox reference's `topics` / `exclude_topics`): a relay limited
 * to some topics' events — claimed, delivered and counted only for those — so relays of
 * different topics share one table. Each list takes topic names and prefix patterns
 * ending in one `*` (`'library.*'`: every topic starting with `library.`), whose `_` and
 * `%` are plain characters; a `*` or `?` anywhere else is refused.
 */
import { topicPatternProblem } from '../declare/define-outbox.js';
import { ConfigurationError } from '../errors/outbox-error.js';

/**
 * Check a relay's topic list, refusing a bad entry with a ConfigurationError naming the
 * option and the entry. `undefined` passes (no filter).
 */
export function checkTopics(
  caller: string,
  option: 'topics' | 'excludeTopics',
  topics: readonly string[] | undefined,
): readonly string[] | undefined {
  if (topics === undefined) return undefined;
  if (!Array.isArray(topics)) {
    throw new ConfigurationError(
      `${caller}({ ${option} }) must be an array of topic names and prefix patterns such as "library.*" (got ${String(topics)})`,
      { path: option },
    );
  }
  for (const topic of topics) {
    if (typeof topic !== 'string' || topic.length === 0) {
      throw new ConfigurationError(
        `${caller}({ ${option} }) takes non-empty topic names and prefix patterns (got ${JSON.stringify(topic)})`,
        { path: option },
      );
    }
    if (topic.includes('*') || topic.includes('?')) {
      const problem = topicPatternProblem(topic);
      if (problem)
        throw new ConfigurationError(`${caller}({ ${option} }): ${problem}`, { path: option });
    }
  }
  return topics;
}

/** Whether `topic` is matched by a list of names and `prefix*` patterns. */
export function topicIn(topics: readonly string[], topic: string): boolean {
  return topics.some((t) => (t.endsWith('*') ? topic.startsWith(t.slice(0, -1)) : t === topic));
}

/**
 * Whether a relay of `topics` / `excludeTopics` serves `topic`: what decides whether a
 * wakeup naming topics wakes it.
 */
export function servesTopic(
  topics: readonly string[] | undefined,
  excludeTopics: readonly string[] | undefined,
  topic: string,
): boolean {
  if (topics !== undefined && !topicIn(topics, topic)) return false;
  return excludeTopics === undefined || !topicIn(excludeTopics, topic);
}
