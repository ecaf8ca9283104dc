import { Queue } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { bullmqTaskBackend, bullmqTaskWorker } from '../../src/index.js';
import { REDIS_URL } from '../support/redis.js';
import { taskBackendSuite } from './suite.js';

const url = new URL(REDIS_URL);
const connection = { host: url.hostname, port: Number(url.port || 6379) };

taskBackendSuite('BullMQ', async (_db, queue) => {
  const reader = new Queue(queue, { connection });
  return {
    backend: bullmqTaskBackend({ queue, connection }),
    startWorker: (outbox, onDelivered) =>
      bullmqTaskWorker(outbox, { queue, connection, onDelivered }),
    async enqueueAgain(handOff) {
      await reader.add('deliver', { ...handOff }, { attempts: 1 });
    },
    async queueRetries() {
      const counts = await reader.getJobCounts('failed', 'delayed', 'waiting-children');
      return counts.failed + counts.delayed;
    },
    childArgs: { backend: 'bullmq', redis: connection },
    async close() {
      await reader.obliterate({ force: true }).catch(() => {});
      await reader.close();
    },
  };
});

describe('bullmqTaskBackend / bullmqTaskWorker: options', () => {
  it('refuses a bad queue name, a missing connection and an unknown option, naming them', () => {
    expect(() => bullmqTaskBackend({ queue: 'a:b', connection })).toThrow(
      /bullmqTaskBackend\(\{ queue \}\) must be a queue name/,
    );
    expect(() =>
      bullmqTaskBackend({ queue: 'q', connection: undefined as never }),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: bullmqTaskBackend({ connection }) must be ioredis options ({ host, port }) or an ioredis client (got undefined)]`,
    );
    expect(() => bullmqTaskBackend({ queue: 'q', connection, attempts: 3 } as never)).toThrow(
      /bullmqTaskBackend\(\) has no option "attempts"/,
    );
  });
});
