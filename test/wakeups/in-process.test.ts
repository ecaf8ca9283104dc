import { describe, expect, it } from 'vitest';
import type { OutboxLogger } from '../../src/observe/logger.js';
import { inProcessWakeup } from '../../src/wakeups/in-process.js';

const context = { connection: { dialect: 'sqlite' } } as const;
const microtasks = () => new Promise((resolve) => setImmediate(resolve));

function recordingLogger() {
  const warnings: { message: string; fields?: Record<string, unknown> }[] = [];
  const logger: OutboxLogger = {
    debug() {},
    info() {},
    warn: (message, fields) => void warnings.push({ message, fields }),
    error() {},
  };
  return { logger, warnings };
}

describe('inProcessWakeup', () => {
  it("logs through the listening outbox's logger when it was given none of its own", async () => {
    const outboxLog = recordingLogger();
    const own = recordingLogger();
    const plain = inProcessWakeup();
    const configured = inProcessWakeup({ logger: own.logger });
    for (const wakeup of [plain, configured]) {
      await wakeup.listen(
        () => {
          throw new Error('listener broke');
        },
        { ...context, logger: outboxLog.logger },
      );
      wakeup.signal(['a.B']);
    }
    await microtasks();
    expect(outboxLog.warnings.map((w) => w.message)).toEqual([
      'a wakeup listener threw; the other listeners still heard the signal',
    ]);
    expect(own.warnings).toHaveLength(1); // a logger of its own wins
  });

  it('needs no capability, so it serves every dialect', () => {
    expect(inProcessWakeup().capabilities).toEqual({});
  });

  it("hears a signal after signal() returns, never inside the caller's stack", async () => {
    const wakeup = inProcessWakeup();
    const heard: (readonly string[])[] = [];
    await wakeup.listen((topics) => void heard.push(topics), context);
    wakeup.signal(['shop.OrderPlaced']);
    expect(heard).toEqual([]);
    await microtasks();
    expect(heard).toEqual([['shop.OrderPlaced']]);
  });

  it('a listener hears the topics as they were signalled, whatever the caller does next', async () => {
    const wakeup = inProcessWakeup();
    const heard: (readonly string[])[] = [];
    await wakeup.listen((topics) => void heard.push(topics), context);
    const topics = ['shop.OrderPlaced'];
    wakeup.signal(topics);
    topics.push('shop.OrderShipped');
    await microtasks();
    expect(heard).toEqual([['shop.OrderPlaced']]);
  });

  it('a listener that throws is logged, and the others still hear', async () => {
    const { logger, warnings } = recordingLogger();
    const wakeup = inProcessWakeup({ logger });
    const heard: (readonly string[])[] = [];
    await wakeup.listen(() => {
      throw new Error('listener broke');
    }, context);
    await wakeup.listen((topics) => void heard.push(topics), context);
    wakeup.signal(['shop.OrderPlaced']);
    await microtasks();
    expect(heard).toEqual([['shop.OrderPlaced']]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0].message).toMatchInlineSnapshot(
      `"a wakeup listener threw; the other listeners still heard the signal"`,
    );
    expect(warnings[0].fields).toMatchObject({ error: { message: 'listener broke' } });
  });

  it('one function listening twice is unsubscribed once per listen', async () => {
    const wakeup = inProcessWakeup();
    let calls = 0;
    const onSignal = () => {
      calls += 1;
    };
    const first = await wakeup.listen(onSignal, context);
    await wakeup.listen(onSignal, context);
    await first();
    wakeup.signal([]);
    await microtasks();
    expect(calls).toBe(1);
  });

  it('a listener unsubscribed between a signal and its delivery does not hear it', async () => {
    const wakeup = inProcessWakeup();
    const heard: (readonly string[])[] = [];
    const off = await wakeup.listen((topics) => void heard.push(topics), context);
    wakeup.signal(['shop.OrderPlaced']);
    await off();
    await microtasks();
    expect(heard).toEqual([]);
  });
});
