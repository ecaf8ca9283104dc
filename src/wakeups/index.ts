export type { InProcessWakeupOptions } from './in-process.js';
export { inProcessWakeup } from './in-process.js';
export type { KafkaWakeupClient, KafkaWakeupOptions } from './kafka.js';
export { kafkaWakeup } from './kafka.js';
export type { ListenNotifyOptions } from './listen-notify.js';
export { listenNotifyWakeup } from './listen-notify.js';
export type { RabbitmqWakeupOptions } from './rabbitmq.js';
export { rabbitmqWakeup } from './rabbitmq.js';
export type { RedisWakeupClient, RedisWakeupOptions } from './redis.js';
export { redisWakeup } from './redis.js';
export type {
  OutboxWakeup,
  WakeupCapabilities,
  WakeupConnection,
  WakeupListenContext,
} from './wakeup.js';
