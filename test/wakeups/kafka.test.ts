import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigurationError,
  defineOutbox,
  event,
  kafkaWakeup,
  type Outbox,
  type OutboxLogger,
  receiver,
  silentLogger,
} from '../../src/index.js';
import { abortableSleep } from '../../src/relay/run-relay.js';
import { pollUntil, wakeupConformance } from '../../testing/conformance/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { fakeTime, openOutbox, waitFor } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import {
  cuttableKafka,
  KAFKA_BROKERS,
  testKafka,
  testProducer,
  uniqueTopic,
} from '../transports/kafka-support.js';

/*
 * Against a real Kafka protocol server (the kcat mock cluster or OUTBOX_TEST_KAFKA_BROKERS).
 * The mock waits out every empty fetch, so listeners here fetch every 100 ms; a new
 * consumer group takes ~3 s to join there (the mock's fixed initial rebalance delay, a
 * timer, not work), which every listen() pays once. So the tests of each group below run
 * concurrently (`describe.concurrent`): each has a wakeup, a signals topic, a consumer
 * group and, where it cuts the connection, a proxy of its own, so none can hear or cut
 * another's, and their joins' waits overlap instead of adding up (the file took ~70 s one
 * after another). The options' tests come first, so the concurrent groups are neighbours
 * and run as one (vitest runs a sequential group between them on its own). A concurrent
 * test asserts with its own `expect` (vitest's rule for snapshots in concurrent tests).
 */
const describeKafka = describe.skipIf(KAFKA_BROKERS === null);
const context = { connection: { dialect: 'sqlite' } } as const;
const FAST = { maxWaitMs: 100 } as const;

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

function ear() {
  const heard: (readonly string[])[] = [];
  return { heard, onSignal: (topics: readonly string[]) => void heard.push([...topics]) };
}

describe('kafkaWakeup: options', () => {
  it('refuses options it cannot work with, before anything connects', () => {
    expect(() => kafkaWakeup({})).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: kafkaWakeup() takes brokers or a client, exactly one (got neither)]`,
    );
    expect(() => kafkaWakeup({ brokers: 'kafka' })).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: kafkaWakeup({ brokers }) must list brokers as "host:port" (got "kafka")]`,
    );
    expect(() => kafkaWakeup({ brokers: 'a:9092', topic: 'a b' })).toThrow(ConfigurationError);
    expect(() =>
      kafkaWakeup({ brokers: 'a:9092', maxFailures: 0 }),
    ).toThrowErrorMatchingInlineSnapshot(
      `[ConfigurationError: kafkaWakeup({ maxFailures }) must be an integer ≥ 1 (got 0)]`,
    );
    expect(() => kafkaWakeup({ brokers: 'a:9092', retentionMs: 0 })).toThrow(
      /retentionMs \}\) must be an integer number of milliseconds ≥ 1/,
    );
    expect(() => kafkaWakeup({ brokers: 'a:9092', replicationFactor: 0 })).toThrow(
      /replicationFactor \}\) must be an integer ≥ 1, or -1/,
    );
  });

  it('needs nothing of the database: any dialect, the signal sent after commit', () => {
    expect(kafkaWakeup({ brokers: 'a:9092' }).capabilities).toEqual({});
  });
});

describeKafka.concurrent('kafkaWakeup conformance', () => {
  wakeupConformance(
    'kafkaWakeup',
    async ({ runId }) => ({
      wakeup: kafkaWakeup({
        brokers: KAFKA_BROKERS!,
        topic: `obk-wake-${runId}`,
        logger: silentLogger,
        ...FAST,
      }),
      context,
    }),
    { signalWithinMs: 10_000 },
  );
});

describeKafka.concurrent('kafkaWakeup', () => {
  /**
   * A client of the test cluster whose `admin()` records what it is asked to create
   * (librdkafka's mock cluster names a controller it does not have, so kafkajs's
   * createTopics cannot reach it: what the wakeup asks for is asserted here, and the
   * refusal path against the mock itself below).
   */
  function recordingAdminClient(answer: () => Promise<boolean>) {
    const asked: unknown[] = [];
    const real = testKafka();
    return {
      asked,
      client: {
        producer: (config?: Record<string, unknown>) => real.producer(config),
        consumer: (config: { groupId: string } & Record<string, unknown>) => real.consumer(config),
        admin: () => ({
          connect: async () => {},
          disconnect: async () => {},
          createTopics: (request: unknown) => {
            asked.push(request);
            return answer();
          },
        }),
      },
    };
  }

  it('creates its signals topic before the first signal: one partition, retention.ms one minute, replication factor 1 — once', async ({
    expect,
  }) => {
    const topic = uniqueTopic('wake');
    const { asked, client } = recordingAdminClient(async () => true);
    const wakeup = kafkaWakeup({ client, topic, logger: silentLogger, ...FAST });
    const e = ear();
    try {
      await wakeup.listen(e.onSignal, context);
      wakeup.signal(['shop.Placed']);
      await waitFor(() => e.heard.length > 0, 'the signal', 15_000);
      wakeup.signal(['shop.Shipped']);
      await waitFor(() => e.heard.length > 1, 'the second signal', 15_000);
      expect(asked).toEqual([
        {
          topics: [
            {
              topic,
              numPartitions: 1,
              replicationFactor: 1,
              configEntries: [{ name: 'retention.ms', value: '60000' }],
            },
          ],
          waitForLeaders: true,
        },
      ]);
    } finally {
      await wakeup.close();
    }
  }, 60_000);

  it('asks for the retention and replication given, and nothing with createTopic: false', async ({
    expect,
  }) => {
    const topic = uniqueTopic('wake');
    const { asked, client } = recordingAdminClient(async () => false);
    const wakeup = kafkaWakeup({
      client,
      topic,
      retentionMs: 5_000,
      replicationFactor: -1,
      logger: silentLogger,
      ...FAST,
    });
    const quiet = recordingAdminClient(async () => true);
    const none = kafkaWakeup({ client: quiet.client, topic, createTopic: false, ...FAST });
    try {
      wakeup.signal(['a']);
      none.signal(['b']);
      await waitFor(() => asked.length > 0, 'the creation', 15_000);
      expect(asked).toMatchObject([
        {
          topics: [
            {
              replicationFactor: -1,
              configEntries: [{ name: 'retention.ms', value: '5000' }],
            },
          ],
        },
      ]);
      expect(quiet.asked).toEqual([]);
    } finally {
      await wakeup.close();
      await none.close();
    }
  }, 60_000);

  it('a cluster that refuses the creation is warned of once, and the signals still flow on the auto-created topic', async ({
    expect,
  }) => {
    const { logger, lines } = recordingLogger();
    const wakeup = kafkaWakeup({
      brokers: KAFKA_BROKERS!,
      topic: uniqueTopic('wake'),
      logger,
      ...FAST,
    });
    const e = ear();
    try {
      await wakeup.listen(e.onSignal, context);
      wakeup.signal(['shop.Placed']);
      await waitFor(() => e.heard.length > 0, 'the signal', 15_000);
      expect(e.heard).toEqual([['shop.Placed']]);
      expect(lines.map((l) => l.message.replace(/"obk-test-wake-\w+"/, '"…"'))).toEqual([
        `kafkaWakeup could not create its signals topic "…" (1 partition, retention.ms=60000); leaving it to the cluster's auto-creation — create it yourself where that is off`,
      ]);
    } finally {
      await wakeup.close();
    }
  }, 60_000);

  it('reads the signals topic from its end, outside any shared group: two processes each hear every signal, and none hears an old one', async ({
    expect,
  }) => {
    const topic = uniqueTopic('wake');
    // A signal sent before anyone listens: nobody may replay it.
    const old = testProducer();
    await old.connect();
    await old.send({ topic, messages: [{ value: JSON.stringify(['shop.Old']) }] });
    await old.disconnect();
    const a = kafkaWakeup({ brokers: KAFKA_BROKERS!, topic, logger: silentLogger, ...FAST });
    const b = kafkaWakeup({ brokers: KAFKA_BROKERS!, topic, logger: silentLogger, ...FAST });
    const ea = ear();
    const eb = ear();
    try {
      const [offA, offB] = await Promise.all([
        a.listen(ea.onSignal, context),
        b.listen(eb.onSignal, context),
      ]);
      a.signal(['shop.OrderPlaced']);
      await pollUntil(
        () => [ea.heard, eb.heard],
        ([x, y]) => x.length > 0 && y.length > 0,
        10_000,
      );
      expect(ea.heard).toEqual([['shop.OrderPlaced']]);
      expect(eb.heard).toEqual([['shop.OrderPlaced']]);
      await offA();
      await offB();
    } finally {
      await a.close();
      await b.close();
    }
  }, 30_000);

  it('consumes again after its connections are dropped, and then signals its listeners with no topics, since a signal may have been missed', async ({
    expect,
  }) => {
    const topic = uniqueTopic('wake');
    const path = await cuttableKafka();
    const { logger, lines } = recordingLogger();
    const wakeup = kafkaWakeup({
      client: path.client({ retry: { retries: 1, initialRetryTime: 100 } }),
      topic,
      logger,
      ...FAST,
    });
    const sender = kafkaWakeup({ brokers: KAFKA_BROKERS!, topic, logger: silentLogger });
    const e = ear();
    try {
      await wakeup.listen(e.onSignal, context);
      path.cut();
      await waitFor(
        () => lines.some((l) => l.message.includes('lost its consumer')),
        'the wakeup to notice its consumer is gone',
        20_000,
      );
      path.restore();
      expect(
        await pollUntil(
          () => e.heard,
          (h) => h.length > 0,
          20_000,
        ),
      ).toEqual([[]]);
      sender.signal(['shop.OrderPlaced']);
      expect(
        await pollUntil(
          () => e.heard,
          (h) => h.length > 1,
          10_000,
        ),
      ).toEqual([[], ['shop.OrderPlaced']]);
      expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    } finally {
      await wakeup.close();
      await sender.close();
      await path.close();
    }
  }, 60_000);

  it('gives up on the fifth failure in a row with an ERROR, while listen() resolves and the relay polls on', async ({
    expect,
  }) => {
    const path = await cuttableKafka();
    path.cut();
    const time = fakeTime();
    const { logger, lines } = recordingLogger();
    const wakeup = kafkaWakeup({
      client: path.client({ retry: { retries: 0 } }),
      topic: uniqueTopic('wake'),
      // What is counted here is the subscription's failures, not the topic's creation.
      createTopic: false,
      logger,
      scheduler: time.scheduler,
      ...FAST,
    });
    try {
      const off = await wakeup.listen(() => {}, context);
      for (let attempt = 1; attempt <= 4; attempt++) {
        await waitFor(() => time.pending() > 0, `retry ${attempt} to be scheduled`, 10_000);
        await time.tick(20_000);
        await waitFor(() => lines.length > attempt, `attempt ${attempt + 1} to fail`, 10_000);
      }
      expect(lines.map((l) => l.level)).toEqual(['warn', 'warn', 'warn', 'warn', 'warn', 'error']);
      expect(lines.at(-1)?.message.replace(/"obk-test-wake-\w+"/, '"…"')).toMatchInlineSnapshot(
        `"kafkaWakeup: reading signals topic "…" failed 5 time(s) in a row; giving up (maxFailures: 5), relays keep polling"`,
      );
      expect(time.pending()).toBe(0);
      await off();
    } finally {
      await wakeup.close();
      await path.close();
    }
  }, 60_000);
});

// The dialects at once, each with a database, a signals topic and groups of its own.
describe.concurrent('kafkaWakeup wakes relays, each dialect at once', () => {
  describeEachDialect('kafkaWakeup wakes relays', (dialect) => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await dialect.open();
    });
    afterAll(() => db.cleanup());

    const Committed = event({ schema: z.object({ n: z.number() }) });
    const RolledBack = event({ schema: z.object({ n: z.number() }) });

    async function startRelay(outbox: Outbox) {
      const stop = new AbortController();
      const idle = { waits: 0 };
      const running = outbox.runRelay({
        signal: stop.signal,
        // A poll no test waits out: a delivery that comes fast came from the wakeup.
        pollIntervalMs: 60_000,
        sleep: (ms, signal) => {
          idle.waits += 1;
          return abortableSleep(ms, signal);
        },
      });
      await waitFor(() => idle.waits >= 1, 'the relay to go idle', 20_000);
      return async () => {
        stop.abort();
        await running;
      };
    }

    it.skipIf(KAFKA_BROKERS === null)(
      'a relay idle on a 60 s poll wakes within a few seconds of a commit, and no signal is sent for a rollback',
      async ({ expect }) => {
        const topic = uniqueTopic('wake');
        const delivered: { n: number; at: number }[] = [];
        const config = defineOutbox({
          events: { 'shop.Committed': Committed, 'shop.RolledBack': RolledBack },
          receivers: {
            'shop.note': receiver(Committed, {
              handle: (e) => void delivered.push({ n: e.payload.n, at: Date.now() }),
            }),
            'shop.never': receiver(RolledBack, { handle: () => {} }),
          },
        });
        const wakeup = kafkaWakeup({
          brokers: KAFKA_BROKERS!,
          topic,
          logger: silentLogger,
          ...FAST,
        });
        // Another process's listener on the same topic: what was signalled, seen from outside.
        const witness = kafkaWakeup({
          brokers: KAFKA_BROKERS!,
          topic,
          logger: silentLogger,
          ...FAST,
        });
        const seen = ear();
        const offWitness = await witness.listen(seen.onSignal, context);
        const outbox = await openOutbox(db, config, { wakeup });
        const stop = await startRelay(outbox);
        try {
          await db.sequelize
            .transaction(async (transaction) => {
              await outbox.fire('shop.RolledBack', { n: 0 }, { transaction });
              throw new Error('roll it back');
            })
            .catch(() => {});
          const committedAt = Date.now();
          await db.sequelize.transaction(async (transaction) => {
            // Two events of one topic in one transaction: one signal.
            await outbox.fire('shop.Committed', { n: 1 }, { transaction });
            await outbox.fire('shop.Committed', { n: 2 }, { transaction });
          });
          await waitFor(() => delivered.length === 2, 'the woken relay to deliver', 10_000);
          expect(delivered[0].at - committedAt).toBeLessThan(3_000);
          await waitFor(() => seen.heard.length > 0, 'the witness to hear the signal', 10_000);
          // A moment for a second (wrong) signal to show up, had either been sent.
          await new Promise((r) => setTimeout(r, 500));
          expect(seen.heard).toEqual([['shop.Committed']]);
        } finally {
          await stop();
          await offWitness();
          await witness.close();
          await outbox.close();
        }
      },
      60_000,
    );
  });
});
