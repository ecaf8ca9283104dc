import { describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  inProcessWakeup,
  kafkaWakeup,
  listenNotifyWakeup,
  rabbitmqWakeup,
  redisWakeup,
} from '../../src/index.js';

/** Every wakeup refuses an option it does not know, naming it and the closest known one. */
const cases: readonly [string, () => unknown, string, string][] = [
  [
    'redisWakeup',
    () => redisWakeup({ url: 'redis://127.0.0.1:6379', chanel: 'c' } as never),
    'chanel',
    'channel',
  ],
  [
    'rabbitmqWakeup',
    () => rabbitmqWakeup({ url: 'amqp://127.0.0.1', exchang: 'x' } as never),
    'exchang',
    'exchange',
  ],
  [
    'kafkaWakeup',
    () => kafkaWakeup({ brokers: ['127.0.0.1:9092'], maxWait: 5 } as never),
    'maxWait',
    'maxWaitMs',
  ],
  [
    'listenNotifyWakeup',
    () => listenNotifyWakeup({ chanel: 'outbox' } as never),
    'chanel',
    'channel',
  ],
  ['inProcessWakeup', () => inProcessWakeup({ loger: undefined } as never), 'loger', 'logger'],
];

describe('wakeup factories refuse an unknown option', () => {
  it.each(cases)('%s() names the unknown key and the closest known one', (who, make, key, hint) => {
    let error: unknown;
    try {
      make();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).message).toContain(
      `${who}() has no option "${key}" — did you mean "${hint}"?`,
    );
  });

  it('the options each wakeup documents are all accepted', () => {
    const wakeup = inProcessWakeup({ logger: undefined });
    expect(wakeup.name).toBe('in-process');
  });
});
