export type { RedisStreamMessage } from './entry.js';
export { parseRedisStreamEntry, REDIS_STREAM_FIELDS, redisStreamFields } from './entry.js';
export type {
  RedisStreamsClient,
  RedisStreamsOptions,
  RedisStreamsPipeline,
} from './redis-streams.js';
export { redisStreams } from './redis-streams.js';
