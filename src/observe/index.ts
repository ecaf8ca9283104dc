export type { OutboxEventMap } from './events.js';
export type { OutboxLogger } from './logger.js';
export { consoleLogger, silentLogger } from './logger.js';
