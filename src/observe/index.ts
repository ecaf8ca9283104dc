export type {
  AroundDelivery,
  DeliveryAttempt,
  DeliveryOutcome,
  FireHeaders,
} from './around-delivery.js';
export type { OutboxEventMap } from './events.js';
export { jsonLogger } from './json-logger.js';
export type { LogLevel } from './levels.js';
export { isLogLevel } from './levels.js';
export type { OutboxLogger } from './logger.js';
export { consoleLogger, silentLogger } from './logger.js';
export type { PinoLikeLogger, PinoLogFn } from './pino-logger.js';
export { pinoLogger, toOutboxLogger } from './pino-logger.js';
export type { PrettyLoggerOptions } from './pretty-logger.js';
export { prettyLogger } from './pretty-logger.js';
export type { SerializedError } from './serialize-error.js';
export type { LoggerOptions, LogStream } from './write-logger.js';
