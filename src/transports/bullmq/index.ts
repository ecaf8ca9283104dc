export type { BullmqTransportOptions } from './bullmq-transport.js';
export { bullmqTransport } from './bullmq-transport.js';
