import { AsyncLocalStorage } from 'node:async_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type AroundDelivery,
  ConfigurationError,
  createOutbox,
  type DeliveryAttempt,
  type DeliveryOutcome,
  defineOutbox,
  event,
  NotYet,
  type OutboxConfig,
  PermanentFailure,
  RetryAfter,
  receiver,
} from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { TestDatabase } from '../../testing/databases.js';
import { drainOutbox } from '../../testing/drain.js';
import {
  captureLogger,
  createReceivedTable,
  openOutbox,
  receivedIds,
  rowsOf,
  shortSleep,
  testClock,
} from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';

const Note = event({ schema: z.object({ n: z.number() }) });
const n = (payload: unknown) => (payload as { n: number }).n;

/** What one hook call saw: the attempt, as plain data, and the outcomes `next()` resolved with. */
interface Seen {
  receiverKey: string;
  receiverKind: string;
  batched: boolean;
  items: {
    n: number;
    eventName: string;
    eventId: string;
    deliveryId: string | null;
    attempt: number;
    target: string;
    hasTransaction: boolean;
  }[];
  outcomes: { status: string; error?: string; deadLettered?: boolean }[];
}

/** A hook that records every attempt it wraps. */
function recorder(): { seen: Seen[]; hook: AroundDelivery } {
  const seen: Seen[] = [];
  const hook: AroundDelivery = async (attempt: DeliveryAttempt, next) => {
    const outcomes = await next();
    seen.push({
      receiverKey: attempt.receiverKey,
      receiverKind: attempt.receiverKind,
      batched: attempt.batched,
      items: attempt.items.map(({ event: e, context }) => ({
        n: n(e.payload),
        eventName: e.name,
        eventId: e.id,
        deliveryId: context.deliveryId,
        attempt: context.attempt,
        target: context.target,
        hasTransaction: context.transaction !== undefined,
      })),
      outcomes: outcomes.map(plain),
    });
  };
  return { seen, hook };
}

function plain(outcome: DeliveryOutcome): Seen['outcomes'][number] {
  if (outcome.status === 'succeeded' || outcome.status === 'lost')
    return { status: outcome.status };
  const error = outcome.error instanceof Error ? outcome.error.name : String(outcome.error);
  return 'deadLettered' in outcome
    ? { status: outcome.status, error, deadLettered: outcome.deadLettered }
    : { status: outcome.status, error };
}

describeEachDialect('aroundDelivery', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());

  /** Open an outbox of `config` with `hooks` around each attempt and a real-time clock. */
  const open = <C extends OutboxConfig>(config: C, hooks?: AroundDelivery | AroundDelivery[]) =>
    openOutbox(db, config, { aroundDelivery: hooks });

  it('the hook sees every handler and transport attempt with its context and its outcome', async () => {
    let flaky = 0;
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'a.ok': receiver(Note, { handle: () => {} }),
        'b.flaky': receiver(Note, {
          handle: () => {
            flaky += 1;
            if (flaky === 1) throw new Error('first time unlucky');
          },
        }),
        'c.later': receiver(Note, {
          handle: () => {
            throw new NotYet(new Date(Date.now() + 86_400_000));
          },
        }),
        'd.refused': receiver(Note, {
          handle: () => {
            throw new PermanentFailure('never');
          },
        }),
        'e.throttled': receiver(Note, {
          deliver: {
            deliver: async () => {
              throw new RetryAfter(600);
            },
          },
        }),
        'f.slow': receiver(Note, {
          deliver: { deliver: () => new Promise<void>(() => {}) },
          timeoutSeconds: 0.05,
        }),
      },
      settings: { backoff: { baseSeconds: 10, capSeconds: 10 } },
    });
    const { seen, hook } = recorder();
    const clock = testClock(new Date());
    const outbox = await openOutbox(db, config, { aroundDelivery: hook, clock: clock.now });
    const fired = await outbox.fire('bus.Note', { n: 7 });

    await drainOutbox(outbox, { respectBackoff: true });
    // The retries, once their backoff has passed.
    clock.advance(60_000);
    await drainOutbox(outbox, { respectBackoff: true });

    const rows = await rowsOf(outbox, 'b.flaky');
    const ids = new Map(
      (await runtimeOf(outbox).store.readDeliveries({})).map((r) => [r.receiverKey, r.id]),
    );
    const item = (key: string, attempt = 1) => ({
      n: 7,
      eventName: 'bus.Note',
      eventId: fired.id,
      deliveryId: ids.get(key),
      attempt,
      target: '',
      // The hook runs around a handler's transaction, so its context carries none.
      hasTransaction: false,
    });
    const sorted = [...seen].sort(
      (x, y) =>
        x.receiverKey.localeCompare(y.receiverKey) || x.items[0].attempt - y.items[0].attempt,
    );
    const attempt = (key: string, kind: string, outcome: Seen['outcomes'][number], no = 1) => ({
      receiverKey: key,
      receiverKind: kind,
      batched: false,
      items: [item(key, no)],
      outcomes: [outcome],
    });
    expect(sorted.filter((s) => s.receiverKey !== 'f.slow')).toEqual([
      attempt('a.ok', 'handler', { status: 'succeeded' }),
      attempt('b.flaky', 'handler', { status: 'failed', error: 'Error', deadLettered: false }),
      attempt('b.flaky', 'handler', { status: 'succeeded' }, 2),
      attempt('c.later', 'handler', { status: 'notYet', error: 'NotYet' }),
      attempt('d.refused', 'handler', {
        status: 'failed',
        error: 'PermanentFailure',
        deadLettered: true,
      }),
      attempt('e.throttled', 'transport', {
        status: 'retryAfter',
        error: 'RetryAfter',
        deadLettered: false,
      }),
    ]);
    // Timed out, and again once its backoff passed.
    const timedOut = { status: 'timedOut', error: 'DeliveryTimeout', deadLettered: false };
    expect(sorted.filter((s) => s.receiverKey === 'f.slow')).toEqual([
      attempt('f.slow', 'transport', timedOut),
      attempt('f.slow', 'transport', timedOut, 2),
    ]);
    expect(rows[0]).toMatchObject({ status: 'succeeded', attempts: 2 });
  });

  it('the hook is shown the very contexts the transport is handed, by deliver and by deliverBatch', async () => {
    const handed: unknown[] = [];
    const shown: unknown[] = [];
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.send': receiver(Note, {
          deliver: async (_e, ctx) => {
            handed.push(ctx);
          },
        }),
        'bus.kafka': receiver(Note, {
          deliver: {
            deliverBatch: async (items) => {
              for (const item of items) handed.push(item.context);
              return undefined;
            },
          },
        }),
      },
    });
    const outbox = await open(config, async (attempt, next) => {
      for (const item of attempt.items) shown.push(item.context);
      return next();
    });
    await outbox.fire('bus.Note', { n: 1 });

    await drainOutbox(outbox);

    expect(handed).toHaveLength(2);
    expect(shown).toHaveLength(2);
    for (const context of handed) expect(shown).toContain(context);
  });

  it('a batching transport is wrapped once per deliverBatch call, with every item and one outcome per item', async () => {
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.kafka': receiver(Note, {
          deliver: {
            deliverBatch: async (items) =>
              items.map(({ event: e }) =>
                n(e.payload) === 2
                  ? { status: 'failed', error: new TypeError('partition offline') }
                  : n(e.payload) === 3
                    ? { status: 'retryAfter', seconds: 30 }
                    : { status: 'sent' },
              ),
          },
        }),
      },
    });
    const { seen, hook } = recorder();
    const outbox = await open(config, hook);
    for (let i = 1; i <= 3; i++) await outbox.fire('bus.Note', { n: i });

    await drainOutbox(outbox, { respectBackoff: true });

    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ receiverKey: 'bus.kafka', receiverKind: 'transport' });
    expect(seen[0].batched).toBe(true);
    expect(seen[0].items.map((i) => [i.n, i.attempt])).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
    expect(seen[0].outcomes).toEqual([
      { status: 'succeeded' },
      { status: 'failed', error: 'TypeError', deadLettered: false },
      { status: 'retryAfter', error: 'RetryAfter', deadLettered: false },
    ]);
    expect((await rowsOf(outbox, 'bus.kafka')).map((r) => r.status)).toEqual([
      'succeeded',
      'failed',
      'failed',
    ]);
  });

  it('hooks compose outermost first, and the receiver runs in the async context its hook called next() in', async () => {
    const order: string[] = [];
    const store = new AsyncLocalStorage<string>();
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.handler': receiver(Note, {
          handle: () => void order.push(`handler in ${store.getStore()}`),
        }),
        'bus.send': receiver(Note, {
          deliver: { deliver: async () => void order.push(`send in ${store.getStore()}`) },
        }),
      },
    });
    const layer =
      (name: string): AroundDelivery =>
      async (attempt, next) => {
        order.push(`${name} before ${attempt.receiverKey}`);
        const outcomes = await store.run(name, next);
        order.push(`${name} after ${attempt.receiverKey}: ${outcomes[0].status}`);
      };
    const outbox = await open(config, [layer('outer'), layer('inner')]);
    await outbox.fire('bus.Note', { n: 1 });

    await drainOutbox(outbox);

    expect(order).toEqual([
      'outer before bus.handler',
      'inner before bus.handler',
      'handler in inner',
      'inner after bus.handler: succeeded',
      'outer after bus.handler: succeeded',
      'outer before bus.send',
      'inner before bus.send',
      'send in inner',
      'inner after bus.send: succeeded',
      'outer after bus.send: succeeded',
    ]);
  });

  it("a handler's hook wraps its whole transaction: when next() resolves, the work and the acknowledgement are committed", async () => {
    const table = await createReceivedTable(db, 'received_around');
    const seen: unknown[] = [];
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: {
        'bus.handler': receiver(Note, {
          handle: async (e, ctx) => {
            await db.sequelize.query(`INSERT INTO ${table} (event_id) VALUES ($1)`, {
              bind: [e.id],
              transaction: ctx.transaction,
            });
          },
        }),
      },
    });
    const outbox = await open(config, async (_attempt, next) => {
      seen.push((await rowsOf(outbox, 'bus.handler'))[0].status, await receivedIds(db, table));
      await next();
      // Read on another connection: only committed work is visible there.
      seen.push((await rowsOf(outbox, 'bus.handler'))[0].status, await receivedIds(db, table));
    });
    const fired = await outbox.fire('bus.Note', { n: 1 });
    await drainOutbox(outbox);
    expect(seen).toEqual(['claimed', [], 'succeeded', [fired.id]]);
  });

  it('the hook wraps attempts at every site a durable receiver runs: runRelay, deliverPending, deliverOne', async () => {
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: { 'bus.handler': receiver(Note, { handle: () => {} }) },
    });
    const { seen, hook } = recorder();
    const outbox = await open(config, hook);
    await outbox.fire('bus.Note', { n: 1 });
    await outbox.runRelay({ passes: 1, sleep: shortSleep() });
    await outbox.fire('bus.Note', { n: 2 });
    await outbox.deliverPending();
    await outbox.fire('bus.Note', { n: 3 });
    const third = (await rowsOf(outbox, 'bus.handler')).at(-1)!;
    expect(await outbox.deliverOne(third.id)).toBe('succeeded');
    expect(seen.map((s) => [s.items[0].n, s.outcomes[0].status])).toEqual([
      [1, 'succeeded'],
      [2, 'succeeded'],
      [3, 'succeeded'],
    ]);
  });

  describe('a hook cannot lose a delivery', () => {
    const counted = () => {
      const ran: string[] = [];
      const config = defineOutbox({
        events: { 'bus.Note': Note },
        receivers: {
          'bus.handler': receiver(Note, {
            handle: () => void ran.push('handler'),
            timeoutSeconds: 0.05,
          }),
          'bus.send': receiver(Note, {
            deliver: { deliver: async () => void ran.push('send') },
            timeoutSeconds: 0.05,
          }),
        },
        settings: { backoff: { baseSeconds: 10, capSeconds: 10 } },
      });
      return { ran, config };
    };

    /** Fire one event under `hook` (which misbehaves on its first call per receiver), drain. */
    async function misbehaving(misbehave: AroundDelivery) {
      const { ran, config } = counted();
      const logger = captureLogger();
      const calls = new Map<string, number>();
      const hook: AroundDelivery = (attempt, next) => {
        const call = (calls.get(attempt.receiverKey) ?? 0) + 1;
        calls.set(attempt.receiverKey, call);
        return call === 1 ? misbehave(attempt, next) : next();
      };
      // A clock of its own, moved past the backoff between the two drains.
      const clock = testClock(new Date());
      const outbox = await openOutbox(db, config, {
        aroundDelivery: hook,
        logger,
        clock: clock.now,
      });
      await outbox.fire('bus.Note', { n: 1 });
      await drainOutbox(outbox, { respectBackoff: true });
      const first = await runtimeOf(outbox).store.readDeliveries({});
      const ranFirst = [...ran];
      clock.advance(60_000);
      await drainOutbox(outbox, { respectBackoff: true });
      const second = await runtimeOf(outbox).store.readDeliveries({});
      return { first, second, ranFirst, ran, logger };
    }

    it('a hook that throws before calling next() fails the attempt with its error, logged, and the row is retried', async () => {
      const { first, second, ranFirst, ran, logger } = await misbehaving(() => {
        throw new Error('the hook broke');
      });
      expect(ranFirst).toEqual([]);
      expect(first.map((r) => [r.receiverKey, r.status, r.attempts, r.lastError])).toEqual([
        ['bus.handler', 'failed', 1, 'Error: the hook broke'],
        ['bus.send', 'failed', 1, 'Error: the hook broke'],
      ]);
      expect(logger.messages('error')).toEqual([
        'an aroundDelivery hook of receiver bus.handler threw before calling next(); the attempt counts as failed',
        'an aroundDelivery hook of receiver bus.send threw before calling next(); the attempt counts as failed',
      ]);
      expect(second.map((r) => [r.status, r.attempts])).toEqual([
        ['succeeded', 2],
        ['succeeded', 2],
      ]);
      expect(ran.sort()).toEqual(['handler', 'send']);
    });

    it('a hook that returns without calling next() fails the attempt saying so, and the row is retried', async () => {
      const { first, second } = await misbehaving(async () => {});
      expect(first.map((r) => [r.status, r.attempts, r.lastError])).toEqual([
        [
          'failed',
          1,
          'DeliveryError: the aroundDelivery hook 0 of receiver bus.handler returned without calling next(); the attempt counts as failed',
        ],
        [
          'failed',
          1,
          'DeliveryError: the aroundDelivery hook 0 of receiver bus.send returned without calling next(); the attempt counts as failed',
        ],
      ]);
      expect(second.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    });

    it('a hook that never calls next() fails the attempt when its time limit runs out, and the row is retried', async () => {
      const { first, second, ranFirst } = await misbehaving(() => new Promise(() => {}));
      expect(ranFirst).toEqual([]);
      expect(first.map((r) => [r.status, r.attempts, r.lastError])).toEqual([
        [
          'failed',
          1,
          "DeliveryError: the aroundDelivery hooks of receiver bus.handler neither called next() nor returned within the attempt's time limit (0.05s); the attempt counts as failed",
        ],
        [
          'failed',
          1,
          "DeliveryError: the aroundDelivery hooks of receiver bus.send neither called next() nor returned within the attempt's time limit (0.05s); the attempt counts as failed",
        ],
      ]);
      expect(second.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    });

    it('a hook that throws after next() or never returns cannot change what is recorded', async () => {
      const thrown = await misbehaving(async (_attempt, next) => {
        await next();
        throw new Error('after the fact');
      });
      expect(thrown.first.map((r) => [r.status, r.attempts, r.lastError])).toEqual([
        ['succeeded', 1, null],
        ['succeeded', 1, null],
      ]);
      expect(thrown.logger.messages('warn')).toEqual([
        "an aroundDelivery hook of receiver bus.handler threw after next(); the attempt's own outcome is recorded",
        "an aroundDelivery hook of receiver bus.send threw after next(); the attempt's own outcome is recorded",
      ]);

      const hung = await misbehaving(async (_attempt, next) => {
        await next();
        await new Promise(() => {});
      });
      expect(hung.first.map((r) => [r.status, r.attempts])).toEqual([
        ['succeeded', 1],
        ['succeeded', 1],
      ]);
      expect(hung.logger.messages('warn')).toHaveLength(2);
    });

    it('a hook that calls next() twice, or without awaiting it, runs the attempt once and it is recorded', async () => {
      const twice = await misbehaving(async (_attempt, next) => {
        const [a, b] = await Promise.all([next(), next()]);
        expect(a).toBe(b);
      });
      expect(twice.ranFirst.sort()).toEqual(['handler', 'send']);
      expect(twice.first.map((r) => [r.status, r.attempts])).toEqual([
        ['succeeded', 1],
        ['succeeded', 1],
      ]);

      const unawaited = await misbehaving((_attempt, next) => {
        void next();
      });
      expect(unawaited.ranFirst.sort()).toEqual(['handler', 'send']);
      expect(unawaited.first.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    });
  });

  it('without a hook the relay delivers as before and keeps no hook list', async () => {
    const { hook, seen } = recorder();
    const config = defineOutbox({
      events: { 'bus.Note': Note },
      receivers: { 'bus.handler': receiver(Note, { handle: () => {} }) },
    });
    const none = await open(config);
    const empty = await open(config, []);
    expect(runtimeOf(none).aroundDelivery).toBeUndefined();
    expect(runtimeOf(empty).aroundDelivery).toBeUndefined();
    await none.fire('bus.Note', { n: 1 });
    expect((await drainOutbox(none)).succeeded).toBe(1);
    // The one hook given alone is a list of one.
    const one = await open(config, hook);
    expect(runtimeOf(one).aroundDelivery).toEqual([hook]);
    expect(seen).toEqual([]);
  });
});

describeEachDialect('fireHeaders', (dialect) => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await dialect.open();
  });
  afterAll(() => db.cleanup());
  const config = defineOutbox({
    events: { 'bus.Note': Note },
    receivers: { 'bus.handler': receiver(Note, { handle: () => {} }) },
  });

  it('fireHeaders adds its headers to every event at fire(), under the message’s own', async () => {
    const store = new AsyncLocalStorage<string>();
    const outbox = await openOutbox(db, config, {
      fireHeaders: [
        () => ({ 'x-request': store.getStore() ?? 'none', 'x-b': 'b' }),
        () => undefined,
      ],
    });
    const fired = await store.run('req-1', () =>
      outbox.fire('bus.Note', { n: 1 }, { headers: { 'x-b': 'mine' } }),
    );
    const [plainFire] = await outbox.fireMany([{ name: 'bus.Note', payload: { n: 2 } }]);
    expect(fired.headers).toEqual({ 'x-request': 'req-1', 'x-b': 'mine' });
    expect(plainFire.headers).toEqual({ 'x-request': 'none', 'x-b': 'b' });
    const stored = await runtimeOf(outbox).store.readDeliveries({});
    expect(stored).toHaveLength(2);
  });

  it('a fireHeaders that throws is logged and the event is fired without its headers', async () => {
    const logger = captureLogger();
    const outbox = await openOutbox(db, config, {
      logger,
      fireHeaders: () => {
        throw new Error('tracing is down');
      },
    });
    const fired = await outbox.fire('bus.Note', { n: 1 });
    expect(fired.headers).toEqual({});
    expect(logger.messages('warn')).toEqual([
      'a fireHeaders function threw; the event is fired without its headers',
    ]);
  });
});

it('an aroundDelivery or fireHeaders that is no function is refused, naming the option', () => {
  const config = defineOutbox({ events: { 'bus.Note': Note }, receivers: {} });
  const sequelize = { query() {}, transaction() {}, getDialect: () => 'sqlite' } as never;
  const refusal = (options: object) => {
    try {
      createOutbox(config, { sequelize, ...options });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      return [(error as ConfigurationError).message, (error as ConfigurationError).path];
    }
    throw new Error('not refused');
  };
  expect(refusal({ aroundDelivery: [() => {}, 'trace'] })).toEqual([
    'createOutbox({ aroundDelivery }) takes a function or an array of functions; aroundDelivery[1] is string',
    'aroundDelivery[1]',
  ]);
  expect(refusal({ fireHeaders: null })).toEqual([
    'createOutbox({ fireHeaders }) takes a function or an array of functions; got null',
    'fireHeaders',
  ]);
});
