export type { RabbitmqOptions } from './rabbitmq.js';
export { ORDERING_KEY_HEADER, rabbitmq } from './rabbitmq.js';
