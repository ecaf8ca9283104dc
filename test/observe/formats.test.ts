import { ConnectionRefusedError } from 'sequelize';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { consoleLogger, DeliveryError, jsonLogger, prettyLogger } from '../../src/index.js';
import { errorWithStack, fixedClock, memoryStream, refused } from './support.js';

describe('prettyLogger', () => {
  it('writes one line per entry: time, level, message, fields as key=value, errors as name: message', () => {
    const stream = memoryStream();
    const logger = prettyLogger({ stream, clock: fixedClock });
    logger.warn('claim failed; retrying in 20 ms', { error: refused(), failures: 1 });
    logger.info('relay started', { workerId: 'host:1:abc:relay-1', batchSize: 50 });
    expect(stream.lines()).toMatchInlineSnapshot(`
      [
        "2031-03-01T12:00:00.000Z WARN  claim failed; retrying in 20 ms error="SequelizeConnectionRefusedError: connect ECONNREFUSED 127.0.0.1:1" failures=1",
        "2031-03-01T12:00:00.000Z INFO  relay started workerId=host:1:abc:relay-1 batchSize=50",
      ]
    `);
  });

  it('drops entries below its level, and writes no stack unless the level is debug', () => {
    const stream = memoryStream();
    const logger = prettyLogger({ stream, clock: fixedClock, level: 'warn' });
    logger.debug('claimed', { rows: 3 });
    logger.info('claimed', { rows: 3 });
    logger.error('boom', { error: errorWithStack(new Error('kaput')) });
    expect(stream.lines()).toEqual(['2031-03-01T12:00:00.000Z ERROR boom error="Error: kaput"']);
  });

  it('at level debug, each error is followed by its stack and its cause’s, indented', () => {
    const stream = memoryStream();
    const logger = prettyLogger({ stream, clock: fixedClock, level: 'debug' });
    const cause = errorWithStack(new TypeError('x is undefined'), ['at ship (ship.ts:9:3)']);
    logger.error('delivering a batch failed', {
      error: errorWithStack(new Error('broke', { cause })),
    });
    expect(stream.lines()).toMatchInlineSnapshot(`
      [
        "2031-03-01T12:00:00.000Z ERROR delivering a batch failed error="Error: broke (cause: TypeError: x is undefined)"",
        "  Error: broke",
        "    at handler (app.ts:1:1)",
        "  caused by: TypeError: x is undefined",
        "    at ship (ship.ts:9:3)",
      ]
    `);
  });

  it('says a DeliveryError once: its message is the line, so the field keeps its name, code and cause', () => {
    const stream = memoryStream();
    const message = 'delivery 7 to crm.sync failed (attempt 1 of 5)';
    const failure = new DeliveryError(message, {
      deliveryId: '7',
      receiverKey: 'crm.sync',
      cause: new Error('HTTP 503'),
      retriable: true,
    });
    prettyLogger({ stream, clock: fixedClock }).warn(message, { failure });
    expect(stream.lines()).toEqual([
      `2031-03-01T12:00:00.000Z WARN  ${message} failure="DeliveryError [OUTBOX_DELIVERY] (cause: Error: HTTP 503)"`,
    ]);
  });

  it('quotes what needs quoting, and survives cycles, dates, bigints and AggregateErrors', () => {
    const stream = memoryStream();
    const loop: Record<string, unknown> = { name: 'loop' };
    loop.self = loop;
    const aggregate = new AggregateError(
      [
        Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' }),
        Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      ],
      '',
    );
    prettyLogger({ stream, clock: fixedClock }).warn('odd fields', {
      text: 'two words',
      empty: '',
      at: new Date('2031-03-01T12:00:01.000Z'),
      big: 10n,
      loop,
      error: aggregate,
      skipped: undefined,
    });
    expect(stream.lines()).toMatchInlineSnapshot(`
      [
        "2031-03-01T12:00:00.000Z WARN  odd fields text="two words" empty="" at=2031-03-01T12:00:01.000Z big=10 loop={"name":"loop","self":"[Circular]"} error="AggregateError: connect ECONNREFUSED ::1:5432; connect ECONNREFUSED 127.0.0.1:5432"",
      ]
    `);
  });

  it('leaves the time out and tags the lines when asked', () => {
    const stream = memoryStream();
    prettyLogger({ stream, timestamps: false, name: 'outboxkit' }).warn('w', { n: 1 });
    expect(stream.lines()).toEqual(['WARN  [outboxkit] w n=1']);
  });

  it('colours the level on a terminal, and not when asked not to', () => {
    const tty = memoryStream(true);
    prettyLogger({ stream: tty, clock: fixedClock }).warn('w');
    const plain = memoryStream(true);
    prettyLogger({ stream: plain, clock: fixedClock, colors: false }).warn('w');
    if (process.env.NO_COLOR === undefined)
      expect(tty.lines()[0]).toBe('2031-03-01T12:00:00.000Z \u001b[33mWARN \u001b[39m w');
    expect(plain.lines()[0]).toBe('2031-03-01T12:00:00.000Z WARN  w');
  });
});

describe('jsonLogger', () => {
  it('writes one JSON object per line: time, level, msg, then the fields, errors as {name, message, code}', () => {
    const stream = memoryStream();
    jsonLogger({ stream, clock: fixedClock }).warn('claim failed; retrying in 20 ms', {
      error: refused(),
      failures: 1,
      msg: 'a field that shares a reserved name',
    });
    const lines = stream.lines();
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toEqual({
      time: '2031-03-01T12:00:00.000Z',
      level: 'warn',
      msg: 'claim failed; retrying in 20 ms',
      error: {
        name: 'SequelizeConnectionRefusedError',
        message: 'connect ECONNREFUSED 127.0.0.1:1',
        code: 'ECONNREFUSED',
      },
      failures: 1,
      'field.msg': 'a field that shares a reserved name',
    });
  });

  it('reads a real Sequelize connection error: its driver error gives the code, and is not repeated as a cause', () => {
    const stream = memoryStream();
    const parent = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
      code: 'ECONNREFUSED',
    });
    jsonLogger({ stream, clock: fixedClock }).warn('claim failed', {
      error: new ConnectionRefusedError(parent),
    });
    expect(JSON.parse(stream.lines()[0]).error).toEqual({
      name: 'SequelizeConnectionRefusedError',
      message: 'connect ECONNREFUSED 127.0.0.1:1',
      code: 'ECONNREFUSED',
    });
  });

  it('carries stacks and causes at level debug only', () => {
    const error = errorWithStack(new Error('outer', { cause: errorWithStack(new Error('inner')) }));
    const info = memoryStream();
    jsonLogger({ stream: info, clock: fixedClock }).error('e', { error });
    const debug = memoryStream();
    jsonLogger({ stream: debug, clock: fixedClock, level: 'debug' }).error('e', { error });
    expect(JSON.parse(info.lines()[0]).error).toEqual({
      name: 'Error',
      message: 'outer',
      cause: { name: 'Error', message: 'inner' },
    });
    expect(JSON.parse(debug.lines()[0]).error).toEqual({
      name: 'Error',
      message: 'outer',
      cause: {
        name: 'Error',
        message: 'inner',
        stack: 'Error: inner\n    at handler (app.ts:1:1)',
      },
      stack: 'Error: outer\n    at handler (app.ts:1:1)',
    });
  });

  it('drops entries below its level', () => {
    const stream = memoryStream();
    const logger = jsonLogger({ stream, clock: fixedClock });
    logger.debug('not written');
    logger.info('written');
    expect(stream.lines().map((l) => JSON.parse(l).msg)).toEqual(['written']);
  });
});

describe('consoleLogger', () => {
  afterEach(() => vi.restoreAllMocks());

  it('prints one line per entry with the error as name: message, no stack and no inspect dump', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const info = vi.spyOn(console, 'info').mockImplementation(() => {});
    const debug = vi.spyOn(console, 'debug').mockImplementation(() => {});
    consoleLogger.warn('claim failed; retrying in 20 ms', { error: refused() });
    consoleLogger.info('database reachable again after 3.2 s (5 failed claims); claiming again');
    consoleLogger.debug('claimed');
    expect(warn.mock.calls).toEqual([
      [
        '[outboxkit] claim failed; retrying in 20 ms error="SequelizeConnectionRefusedError: connect ECONNREFUSED 127.0.0.1:1"',
      ],
    ]);
    expect(info.mock.calls).toEqual([
      ['[outboxkit] database reachable again after 3.2 s (5 failed claims); claiming again'],
    ]);
    expect(debug).not.toHaveBeenCalled();
  });
});
