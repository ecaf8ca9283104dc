import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ConfigurationError } from '../../src/errors/outbox-error.js';
import type { OutboxLogger } from '../../src/observe/logger.js';
import { silentLogger } from '../../src/observe/logger.js';
import { listenNotifyWakeup } from '../../src/wakeups/listen-notify.js';
import type { WakeupListenContext } from '../../src/wakeups/wakeup.js';
import { pollUntil } from '../../testing/conformance/index.js';
import { postgresUrl } from '../../testing/databases.js';
import { wakeupConnectionOf } from './support.js';

const uniqueName = () => `obk_${randomBytes(5).toString('hex')}`;

function recordingLogger() {
  const lines: { level: 'warn' | 'error'; message: string }[] = [];
  const logger: OutboxLogger = {
    debug() {},
    info() {},
    warn: (message) => void lines.push({ level: 'warn', message }),
    error: (message) => void lines.push({ level: 'error', message }),
  };
  return { logger, lines };
}

describe('listenNotifyWakeup', () => {
  it('refuses a channel that is not a lower-case identifier, naming it', () => {
    expect(() => listenNotifyWakeup({ channel: 'Outbox-Events' })).toThrow(ConfigurationError);
    expect(() => listenNotifyWakeup({ channel: 'x'.repeat(64) })).toThrow(ConfigurationError);
    expect(() =>
      listenNotifyWakeup({ channel: 'a"; DROP TABLE t; --' }),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: listenNotifyWakeup({ channel }) must be a lower-case identifier of at most 63 characters: letters, digits and _, not starting with a digit (got "a\\"; DROP TABLE t; --")]`,
    );
  });

  it('declares that its signal rides in the write on its channel, and that it needs PostgreSQL', () => {
    expect(listenNotifyWakeup().capabilities).toEqual({
      notifyInWrite: { channel: 'outboxkit' },
      dialects: ['postgres'],
    });
    expect(listenNotifyWakeup({ channel: 'shop_events' }).capabilities.notifyInWrite).toEqual({
      channel: 'shop_events',
    });
  });

  it('refuses to listen for an outbox on another database than PostgreSQL', async () => {
    const wakeup = listenNotifyWakeup({ logger: silentLogger });
    await expect(
      wakeup.listen(() => {}, { connection: { dialect: 'sqlite' } }),
    ).rejects.toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: listenNotifyWakeup() needs PostgreSQL (the outbox's database is sqlite); use inProcessWakeup() or none]`,
    );
    await wakeup.close();
  });

  it('refuses to listen without a connection from its options or from the relay', async () => {
    const wakeup = listenNotifyWakeup({ logger: silentLogger });
    await expect(wakeup.listen(() => {}, {} as WakeupListenContext)).rejects.toThrow(
      /listenNotifyWakeup needs a connection/,
    );
    await wakeup.close();
  });

  it('listens without failing when the server cannot be reached, and gives up after maxFailures with an error', async () => {
    const { logger, lines } = recordingLogger();
    const wakeup = listenNotifyWakeup({ logger, maxFailures: 1 });
    // The relay keeps polling: listen() resolves, the wakeup retries (here: gives up) itself.
    const off = await wakeup.listen(() => {}, {
      connection: { dialect: 'postgres', host: '127.0.0.1', port: 1 },
    });
    expect(lines.map((l) => l.level)).toEqual(['warn', 'error']);
    expect(lines[1].message).toMatchInlineSnapshot(
      `"LISTEN on "outboxkit" failed 1 time(s) in a row; giving up (maxFailures: 1), relays keep polling"`,
    );
    await off();
    await wakeup.close();
  });
});

describe.skipIf(!inject('pgAvailable'))('listenNotifyWakeup [postgres]', () => {
  let admin: pg.Client;
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
  });
  afterAll(() => admin.end());

  /** A wakeup whose LISTEN connection can be found by its application_name. */
  function wakeupWithName(logger: OutboxLogger = silentLogger) {
    const channel = uniqueName();
    const applicationName = uniqueName();
    const wakeup = listenNotifyWakeup({
      channel,
      logger,
      connection: { connectionString: postgresUrl(), application_name: applicationName },
    });
    const context = { connection: wakeupConnectionOf(postgresUrl()) };
    const connections = async () => {
      const r = await admin.query(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
        [applicationName],
      );
      return r.rows[0].n as number;
    };
    const notify = (topic: string) => admin.query('SELECT pg_notify($1, $2)', [channel, topic]);
    return { wakeup, context, connections, applicationName, notify };
  }

  it('holds one connection for all its listeners, and gives it back when the last one leaves', async () => {
    const { wakeup, context, connections } = wakeupWithName();
    const offA = await wakeup.listen(() => {}, context);
    const offB = await wakeup.listen(() => {}, context);
    expect(await connections()).toBe(1);
    await offA();
    expect(await connections()).toBe(1);
    await offB();
    expect(await pollUntil(connections, (n) => n === 0, 5_000)).toBe(0);
    await wakeup.close();
  });

  it('close() while the connection is opening leaves no connection behind', async () => {
    const { wakeup, context, connections } = wakeupWithName();
    const listening = wakeup.listen(() => {}, context);
    await wakeup.close();
    const off = await listening;
    expect(await pollUntil(connections, (n) => n === 0, 5_000)).toBe(0);
    await off();
  });

  it('a listener joining while the last one leaves keeps the connection', async () => {
    const { wakeup, context, notify } = wakeupWithName();
    const offA = await wakeup.listen(() => {}, context);
    const heard: (readonly string[])[] = [];
    const leaving = offA();
    const offB = await wakeup.listen((topics) => void heard.push(topics), context);
    await leaving;
    await notify('shop.OrderPlaced');
    expect(
      await pollUntil(
        () => heard,
        (h) => h.length > 0,
        5_000,
      ),
    ).toEqual([['shop.OrderPlaced']]);
    await offB();
    await wakeup.close();
  });

  it('reconnects with backoff after its connection is lost, and then signals its listeners, since a NOTIFY may have been missed', async () => {
    const { logger, lines } = recordingLogger();
    const { wakeup, context, applicationName, notify } = wakeupWithName(logger);
    const heard: (readonly string[])[] = [];
    await wakeup.listen((topics) => void heard.push(topics), context);
    await admin.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
      [applicationName],
    );
    // Back after the first backoff step (500 ms): one signal naming no topic.
    expect(
      await pollUntil(
        () => heard,
        (h) => h.length > 0,
        5_000,
      ),
    ).toEqual([[]]);
    expect(lines.some((l) => l.message.includes('reconnecting'))).toBe(true);
    await notify('shop.OrderPlaced');
    expect(
      await pollUntil(
        () => heard,
        (h) => h.length > 1,
        5_000,
      ),
    ).toEqual([[], ['shop.OrderPlaced']]);
    await wakeup.close();
  });
});
