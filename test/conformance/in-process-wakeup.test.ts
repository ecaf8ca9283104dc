import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/observe/logger.js';
import { inProcessWakeup } from '../../src/wakeups/in-process.js';
import type { OutboxWakeup } from '../../src/wakeups/wakeup.js';
import {
  runWakeupCheck,
  type WakeupCheckId,
  type WakeupFactory,
  wakeupConformance,
} from '../../testing/conformance/index.js';

/** What relays are told about the outbox database; the in-process wakeup needs none of it. */
const context = { connection: { dialect: 'sqlite' } } as const;

const factory: WakeupFactory = async () => ({
  wakeup: inProcessWakeup({ logger: silentLogger }),
  context,
});

wakeupConformance('inProcessWakeup', factory);

describe('wakeup conformance: the checks catch a broken wakeup', () => {
  /** A wakeup breaking one promise of the seam (built on a correct one), and its check. */
  const broken: {
    readonly fault: string;
    readonly check: WakeupCheckId;
    readonly message: RegExp;
    readonly make: () => OutboxWakeup;
  }[] = [
    {
      fault: 'never calls its listeners',
      check: 'signal-reaches-listener',
      message: /did not hear the signal/,
      make: () => ({ ...inProcessWakeup(), signal() {} }),
    },
    {
      fault: 'names a topic nobody sent',
      check: 'signal-reaches-listener',
      message: /which no signal named/,
      make: () => {
        const inner = inProcessWakeup();
        return { ...inner, signal: (topics) => inner.signal([...topics, 'someone.Else']) };
      },
    },
    {
      fault: 'calls only its first listener',
      check: 'two-listeners-hear-one-signal',
      message: /the second listener did not hear/,
      make: () => {
        const inner = inProcessWakeup();
        let first = true;
        return {
          ...inner,
          async listen(onSignal, ctx) {
            const keep = first;
            first = false;
            return inner.listen(keep ? onSignal : () => {}, ctx);
          },
        };
      },
    },
    {
      fault: 'ignores an unsubscribe',
      check: 'unsubscribed-listener-hears-nothing',
      message: /unsubscribed listener must hear nothing/,
      make: () => {
        const inner = inProcessWakeup();
        return {
          ...inner,
          async listen(onSignal, ctx) {
            await inner.listen(onSignal, ctx);
            return async () => {};
          },
        };
      },
    },
    {
      fault: 'lets a throwing listener stop the others',
      check: 'throwing-listener-spares-the-others',
      message: /conformance: this listener throws/,
      make: () => {
        const listeners = new Set<(topics: readonly string[]) => void>();
        return {
          ...inProcessWakeup(),
          signal: (topics) => {
            for (const l of listeners) l(topics);
          },
          async listen(onSignal) {
            listeners.add(onSignal);
            return async () => void listeners.delete(onSignal);
          },
        };
      },
    },
    {
      fault: 'keeps listening after close()',
      check: 'close-stops-listening',
      message: /a listener of a closed wakeup must hear nothing/,
      make: () => ({ ...inProcessWakeup(), async close() {} }),
    },
    {
      fault: 'declares a function among its capabilities',
      check: 'declares-capabilities',
      message: /could not be cloned|capabilities are plain data/,
      make: () => ({
        ...inProcessWakeup(),
        capabilities: { dialects: ['sqlite'], check: () => true } as never,
      }),
    },
  ];

  for (const { fault, check, message, make } of broken) {
    it(`a wakeup that ${fault} fails "${check}"`, async () => {
      await expect(
        runWakeupCheck(check, async () => ({ wakeup: make(), context }), {
          signalWithinMs: 100,
          quietMs: 50,
        }),
      ).rejects.toThrow(message);
    });
  }

  it('the same checks pass for inProcessWakeup', async () => {
    for (const { check } of broken) await runWakeupCheck(check, factory, { quietMs: 50 });
  });
});
