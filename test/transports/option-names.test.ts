import { describe, expect, it } from 'vitest';
import {
  ConfigurationError,
  kafka,
  rabbitmq,
  redisStreams,
  topicRouter,
  webhook,
} from '../../src/index.js';

/**
 * Every transport refuses an option it does not know, naming it and the closest known one,
 * as capture() does: a misspelt option would otherwise be dropped and its default used.
 */
const cases: readonly [string, () => unknown, string, string][] = [
  [
    'redisStreams',
    () => redisStreams({ url: 'redis://127.0.0.1:6379', stream: 's', maxLen: 10 } as never),
    'maxLen',
    'maxLength',
  ],
  [
    'rabbitmq',
    () => rabbitmq({ url: 'amqp://127.0.0.1', exchange: '', routingkey: 'x' } as never),
    'routingkey',
    'routingKey',
  ],
  [
    'kafka',
    () => kafka({ brokers: ['127.0.0.1:9092'], topic: 't', ackTimeoutMS: 5 } as never),
    'ackTimeoutMS',
    'ackTimeoutMs',
  ],
  [
    'webhook',
    () => webhook({ url: 'https://example.com/hook', timeout: 5 } as never),
    'timeout',
    'timeoutMs',
  ],
  ['topicRouter', () => topicRouter({}, { defualt: undefined } as never), 'defualt', 'default'],
];

describe('transport factories refuse an unknown option', () => {
  it.each(cases)('%s() names the unknown key and the closest known one', (who, make, key, hint) => {
    let error: unknown;
    try {
      make();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigurationError);
    const message = (error as ConfigurationError).message;
    expect(message).toContain(`${who}() has no option "${key}" — did you mean "${hint}"?`);
    expect((error as ConfigurationError).path).toBe(`${who}.${key}`);
  });

  it('the message lists every known option', () => {
    expect(() =>
      redisStreams({ url: 'redis://127.0.0.1:6379', stream: 's', maxLen: 10 } as never),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: redisStreams() has no option "maxLen" — did you mean "maxLength"? (known: client, maxLength, name, stream, url)]`,
    );
  });

  it('a key far from every known one gets no hint', () => {
    expect(() => topicRouter({}, { zzzzzzzz: 1 } as never)).toThrow(
      /^topicRouter\(\) has no option "zzzzzzzz" \(known: default, name\)$/,
    );
  });
});
