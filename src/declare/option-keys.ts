import { ConfigurationError } from '../errors/outbox-error.js';
import { closestName } from './config-path.js';

/** Every key of every member of a union of option types (`keyof` alone keeps only the common ones). */
export type OptionKey<T> = T extends unknown ? Extract<keyof T, string> : never;

/**
 * The option names of a factory, checked against its options type both ways: a name the
 * type lacks does not compile, and neither does a list that leaves out one of the type's
 * keys (the missing key is named in the error), so the run-time list cannot drift from the
 * TSDoc'd interface.
 *
 * @example
 * ```ts
 * const REDIS_STREAMS_OPTIONS = optionNames<RedisStreamsOptions>()(['url', 'client', 'stream']);
 * ```
 */
export function optionNames<T>() {
  return <const K extends readonly OptionKey<T>[]>(
    names: K &
      ([Exclude<OptionKey<T>, K[number]>] extends [never]
        ? unknown
        : { readonly missing: Exclude<OptionKey<T>, K[number]> }),
  ): readonly string[] => Object.freeze([...names].sort());
}

/**
 * Refuse an option a factory does not know, the way `capture()` and `defineOutbox` do: a
 * misspelt option (`redisStreams({ maxLen })` for `maxLength`) would otherwise be ignored
 * and its default silently used.
 *
 * @param who the factory, as the message starts (`redisStreams`).
 * @throws {ConfigurationError} naming the unknown key, the closest known one ("did you mean
 * maxLength?") and every known one.
 */
export function checkOptionNames(who: string, options: unknown, known: readonly string[]): void {
  if (options === undefined || options === null || typeof options !== 'object') return;
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const hint = closestOption(key, known);
    throw new ConfigurationError(
      `${who}() has no option "${key}"${hint ? ` — did you mean "${hint}"?` : ''} (known: ${known.join(', ')})`,
      { path: `${who}.${key}` },
    );
  }
}

/**
 * The known option a misspelt one most likely meant: the closest by edit distance (as
 * `capture()` hints), else the one it abbreviates (`maxLen` for `maxLength`, three edits
 * away, too far for the distance alone).
 */
function closestOption(key: string, known: readonly string[]): string | undefined {
  const close = closestName(key, known);
  if (close) return close;
  const lower = key.toLowerCase();
  if (lower.length < 3) return undefined;
  return known.find((k) => k.toLowerCase().startsWith(lower));
}
