export type { RabbitmqOptions } from './rabbitmq.js';
export { rabbitmq } from './rabbitmq.js';
