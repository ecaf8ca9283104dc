import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Sequelize } from 'sequelize';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type CreateOutboxOptions,
  createOutbox,
  defineOutbox,
  event,
  type OutboxLogger,
  pinoLogger,
  receiver,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import { refused } from './support.js';

type Call = { level: string; args: unknown[]; self: unknown };

/**
 * An object shaped like a pino logger: each method takes `(obj, msg)` or `(msg)` and reads
 * `this`, as pino's do. With `marked`, it carries pino's public `Symbol.for('pino.serializers')`.
 */
function fakePino(marked = true) {
  const calls: Call[] = [];
  const method = (level: string) =>
    function (this: unknown, objOrMsg: object | string, msg?: string) {
      calls.push({ level, args: msg === undefined ? [objOrMsg] : [objOrMsg, msg], self: this });
    };
  const logger = {
    level: 'debug',
    levels: { values: { debug: 20, info: 30, warn: 40, error: 50 } },
    trace: method('trace'),
    debug: method('debug'),
    info: method('info'),
    warn: method('warn'),
    error: method('error'),
    fatal: method('fatal'),
    ...(marked ? { [Symbol.for('pino.serializers')]: {} } : {}),
  };
  return { logger, calls };
}

describe('pinoLogger', () => {
  it('calls pino with the fields first and the message second, as a method of the logger', () => {
    const { logger, calls } = fakePino(false);
    pinoLogger(logger).warn('claim failed; retrying in 20 ms', { failures: 1, workerId: 'w' });
    expect(calls).toEqual([
      {
        level: 'warn',
        args: [{ failures: 1, workerId: 'w' }, 'claim failed; retrying in 20 ms'],
        self: logger,
      },
    ]);
  });

  it('calls pino with the message alone when there are no fields', () => {
    const { logger, calls } = fakePino(false);
    const adapted = pinoLogger(logger);
    adapted.info('relay started');
    adapted.debug('claimed', {});
    expect(calls.map((c) => [c.level, c.args])).toEqual([
      ['info', ['relay started']],
      ['debug', ['claimed']],
    ]);
  });

  it("hands an error under `error` to pino as `err`, raw, for pino's own serializer; other errors as plain data", () => {
    const { logger, calls } = fakePino(false);
    const error = refused();
    const other = new TypeError('bad listener');
    pinoLogger(logger).error('a listener threw', { error, listenerError: other, n: 2 });
    const [fields, message] = calls[0].args as [Record<string, unknown>, string];
    expect(message).toBe('a listener threw');
    expect(fields.err).toBe(error);
    expect(fields).not.toHaveProperty('error');
    expect(fields.listenerError).toMatchObject({ name: 'TypeError', message: 'bad listener' });
    expect(JSON.parse(JSON.stringify(fields.listenerError))).toHaveProperty('stack');
    expect(fields.n).toBe(2);
  });

  it('keeps an `error` field that is not an Error as it is', () => {
    const { logger, calls } = fakePino(false);
    pinoLogger(logger).warn('failed', { error: 'Error: boom' });
    expect(calls[0].args).toEqual([{ error: 'Error: boom' }, 'failed']);
  });
});

describe('createOutbox({ logger })', () => {
  const sequelizes: Sequelize[] = [];
  afterAll(async () => {
    for (const s of sequelizes) await s.close();
  });

  function outboxWith(logger: CreateOutboxOptions['logger']) {
    const sequelize = new Sequelize('sqlite::memory:', { logging: false });
    sequelizes.push(sequelize);
    const Placed = event({ schema: z.object({ n: z.number() }) });
    const config = defineOutbox({
      events: { 'shop.Placed': Placed },
      receivers: { 'shop.ship': receiver(Placed, { handle: () => {} }) },
    });
    return createOutbox(config, { sequelize, wakeup: null, logger });
  }

  it('accepts a pino logger as it is, recognised by its marker, and adapts it', () => {
    const { logger, calls } = fakePino(true);
    const outbox = outboxWith(logger);
    runtimeOf(outbox).logger.warn('claim failed; retrying in 20 ms', { failures: 1 });
    expect(calls).toEqual([
      { level: 'warn', args: [{ failures: 1 }, 'claim failed; retrying in 20 ms'], self: logger },
    ]);
  });

  it('uses a (message, fields) logger — an OutboxLogger, winston — as it is', () => {
    const seen: unknown[][] = [];
    const logger: OutboxLogger = {
      debug() {},
      info() {},
      warn: (...args) => void seen.push(args),
      error() {},
    };
    const outbox = outboxWith(logger);
    runtimeOf(outbox).logger.warn('claim failed; retrying in 20 ms', { failures: 1 });
    expect(seen).toEqual([['claim failed; retrying in 20 ms', { failures: 1 }]]);
  });

  it('uses an already adapted pino logger as it is, without adapting it twice', () => {
    const { logger, calls } = fakePino(true);
    const outbox = outboxWith(pinoLogger(logger));
    runtimeOf(outbox).logger.info('relay started');
    expect(calls.map((c) => c.args)).toEqual([['relay started']]);
  });
});

describe('a real pino logger (pino 10)', () => {
  it("writes the relay's entries as pino JSON lines: fields as keys, an error through pino's err serializer", async () => {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n')) if (line.trim()) lines.push(JSON.parse(line));
        done();
      },
    });
    const logger = pino({ level: 'debug' }, destination);
    const sequelize = new Sequelize('sqlite::memory:', { logging: false });
    try {
      const Placed = event({ schema: z.object({ n: z.number() }) });
      const config = defineOutbox({
        events: { 'shop.Placed': Placed },
        receivers: {
          'shop.ship': receiver(Placed, {
            handle: () => {
              throw new Error('the carrier said no');
            },
          }),
        },
      });
      const outbox = createOutbox(config, { sequelize, wakeup: null, logger });
      await outbox.migrate();
      await outbox.fire('shop.Placed', { n: 1 });
      await outbox.deliverPending();
      runtimeOf(outbox).logger.error('the wakeup gave up', {
        error: new Error('connection refused'),
      });
      await outbox.close();
    } finally {
      await sequelize.close();
    }
    const errLine = lines.find((l) => l.msg === 'the wakeup gave up');
    // A failed attempt: a warning whose `failure` field pino writes as data (cause included).
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: expect.stringMatching(/^delivery 1 to shop\.ship failed \(attempt 1 of 5\)/),
        failure: expect.objectContaining({
          name: 'DeliveryError',
          code: 'OUTBOX_DELIVERY',
          cause: expect.objectContaining({ message: 'the carrier said no' }),
        }),
      }),
    );
    // An `error` field reaches pino raw, as `err`, through pino's own serializer.
    expect(errLine).toMatchObject({
      level: 50,
      msg: 'the wakeup gave up',
      err: { type: 'Error', message: 'connection refused', stack: expect.any(String) },
    });
    // Every line is pino's own shape: a numeric level, a time, a message.
    for (const l of lines)
      expect(l).toMatchObject({
        level: expect.any(Number),
        time: expect.any(Number),
        msg: expect.any(String),
      });
  });
});
