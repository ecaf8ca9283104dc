/** The levels outboxkit logs at, least severe first. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Each level's rank: an entry is written when its rank is at least the logger's. */
export const LOG_LEVEL_RANK: Readonly<Record<LogLevel, number>> = {
  debug: 10,
  info: 20,
  warn: 30,
  error: 40,
};

/** Whether `value` names a level (for a level read from a flag or the environment). */
export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && Object.hasOwn(LOG_LEVEL_RANK, value);
}
