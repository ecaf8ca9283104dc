/**
 * RabbitMQ itself stopped mid-run, not a connection cut behind a proxy: a private node of
 * this file's own (`rabbitmq-node.ts`: its own node name, ports and data directory; the
 * shared broker on 5672 is never touched) is stopped while the relay delivers a steady
 * stream of events, and started again on the same data directory, so its durable exchange
 * and queue and the persistent messages confirmed before the stop survive, as on a
 * production broker. SQLite's run stops it cleanly (SIGTERM: clients get a
 * connection.close); PostgreSQL's kills it (SIGKILL to the whole VM: sockets just drop).
 */
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AnyEvent,
  defineOutbox,
  event,
  type OutboxLogger,
  rabbitmq,
  rabbitmqWakeup,
  receiver,
} from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { fakeTime, openOutbox, rowsOf } from '../relay/support.js';
import { describeEachDialect } from '../support/dialects.js';
import { type PrivateRabbitmq, privateRabbitmq, rabbitmqServerScript } from './rabbitmq-node.js';
import { uniqueName } from './rabbitmq-support.js';

const script = rabbitmqServerScript();
if (!script) {
  const banner =
    'rabbitmq-server is not installed (no /usr/lib/rabbitmq/bin/rabbitmq-server, none on the PATH, no OUTBOX_TEST_RABBITMQ_SERVER): the RabbitMQ restart suite is SKIPPED';
  if (process.env.OUTBOX_REQUIRE_SERVERS === '1')
    throw new Error(`${banner}, and OUTBOX_REQUIRE_SERVERS=1 forbids skipping (see .ci/run).`);
  console.warn(`\n${'!'.repeat(80)}\n!! ${banner}\n${'!'.repeat(80)}\n`);
}

/** Poll `check` every 50 ms (each poll reads every delivery row); fail after `timeoutMs`. */
async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** What the wakeup logged, to assert it reconnected rather than gave up. */
function recordingLogger() {
  const lines: { level: string; message: string }[] = [];
  const at = (level: string) => (message: string) => void lines.push({ level, message });
  const logger: OutboxLogger = {
    debug() {},
    info() {},
    warn: at('warn'),
    error: at('error'),
  };
  return { logger, lines };
}

// The two dialects run at once, each with a node of its own: a node's start is most of
// this file's time (several seconds of CPU each), and two overlap on the two cores.
describe.skipIf(!script)('rabbitmq() when the broker itself restarts', () => {
  describe.concurrent('each dialect with a node of its own', () => {
    describeEachDialect('stopped mid-run and started again', (dialect) => {
      let db: TestDatabase;
      let node: PrivateRabbitmq;
      beforeAll(async () => {
        node = await privateRabbitmq(script!);
        [db] = await Promise.all([dialect.open(), node.start()]);
      }, 90_000);
      afterAll(async () => {
        await node?.cleanup();
        await db?.cleanup();
      }, 30_000);

      /** An admin connection to the private node: topology, and reading the queue back. */
      async function admin() {
        const model = await amqp.connect(node.url);
        model.on('error', () => {});
        const channel = await model.createChannel();
        return { model, channel };
      }

      const Placed = event({ schema: z.object({ order: z.string(), n: z.number() }) });
      const how = dialect.name === 'sqlite' ? 'graceful' : 'kill';

      it(`the broker ${how === 'graceful' ? 'shut down (SIGTERM)' : 'killed (SIGKILL)'} under a steady stream: failures recorded and retried, everything delivered after it is back, in order per key, nothing lost`, async () => {
        const exchange = uniqueName('restart.x');
        const queue = uniqueName('restart.q');
        {
          const a = await admin();
          await a.channel.assertExchange(exchange, 'topic', { durable: true });
          await a.channel.assertQueue(queue, { durable: true });
          await a.channel.bindQueue(queue, exchange, 'shop.#');
          await a.model.close();
        }

        // The wakeup's reconnect backoff runs on fake time: the test moves it once the
        // broker is back, instead of waiting real seconds (and it cannot reach its fifth
        // failure in a row, giving up, while the broker restarts).
        const time = fakeTime();
        const { logger, lines } = recordingLogger();
        const wakeup = rabbitmqWakeup({
          url: node.url,
          exchange: uniqueName('restart.wake'),
          logger,
          scheduler: time.scheduler,
          connectTimeoutMs: 5_000,
        });
        const config = defineOutbox({
          events: { 'shop.OrderPlaced': Placed },
          receivers: {
            'shop.bus': receiver(AnyEvent, {
              deliver: rabbitmq({ url: node.url, exchange, connectTimeoutMs: 5_000 }),
              maxAttempts: 1_000, // the outage must not dead-letter anything
            }),
          },
          // Retries in tens of milliseconds (capped at half a second), so the test waits on
          // the broker, never on a backoff.
          settings: { backoff: { baseSeconds: 0.05, capSeconds: 0.5 } },
        });
        const outbox = await openOutbox(db, config, { wakeup });
        const heard: (readonly string[])[] = [];
        const stopListening = await wakeup.listen((topics) => void heard.push([...topics]), {
          connection: { dialect: dialect.name },
        });

        // A steady stream: one event every 30 ms over four keys, until told to stop.
        const fired: { id: string; sequence: string; key: string }[] = [];
        let streaming = true;
        const stream = (async () => {
          for (let n = 0; streaming; n++) {
            const key = `o-${n % 4}`;
            const e = await outbox.fire(
              'shop.OrderPlaced',
              { order: key, n },
              { orderingKey: key },
            );
            fired.push({ id: e.id, sequence: e.sequence, key });
            await new Promise((r) => setTimeout(r, 30));
          }
        })();
        const stop = new AbortController();
        const relay = outbox.runRelay({ signal: stop.signal, pollIntervalMs: 25 });
        const rows = () => rowsOf(outbox, 'shop.bus');
        try {
          await until(
            async () => (await rows()).filter((r) => r.status === 'succeeded').length >= 12,
            'the first events to be delivered',
            15_000,
          );

          // ---- the broker goes away -----------------------------------------------------
          await node.stop(how);
          const stoppedAt = fired.length;
          const sentBeforeStop = new Set(
            (await rows()).filter((r) => r.status === 'succeeded').map((r) => r.eventSequence),
          );
          await until(
            async () => (await rows()).some((r) => r.attempts >= 3 && r.lastError !== null),
            'the relay to record failures and retry them',
            15_000,
          );
          await until(
            () => fired.length >= stoppedAt + 12,
            'events fired while it is down',
            10_000,
          );
          const during = await rows();
          // Recorded on the rows: a row being retried right now reads 'claimed', but keeps
          // its last error and its spent attempts.
          const recorded = during.filter(
            (r) => r.status !== 'succeeded' && r.attempts >= 1 && r.lastError !== null,
          );
          expect(recorded.length).toBeGreaterThan(0);
          // Each names the broker's loss (a refused connect, a connection or channel that
          // closed, a nack as it shut down); the retries while it is away are refused.
          for (const r of recorded) expect(r.lastError).toMatch(/RabbitMQ/);
          expect(
            recorded.some((r) =>
              /could not connect to RabbitMQ at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:\d+.*ECONNREFUSED/.test(
                r.lastError ?? '',
              ),
            ),
          ).toBe(true);
          expect(during.filter((r) => r.lastError?.includes('guest:guest'))).toEqual([]);
          expect(during.filter((r) => r.status === 'dead')).toEqual([]);

          // ---- and comes back, on the same data directory --------------------------------
          await node.start();
          // The wakeup's listener reconnects at its next backoff step; once back it signals
          // its listeners with no topics (a signal sent while it was down was lost).
          const reconnectBy = Date.now() + 20_000;
          while (!heard.some((t) => t.length === 0)) {
            if (Date.now() > reconnectBy)
              throw new Error('timed out waiting for the wakeup to reconnect');
            await time.tick(100);
            await new Promise((r) => setTimeout(r, 20)); // its connect is real I/O
          }
          const backAt = heard.length;
          // Events fired after the restart still wake the relays: the publisher reconnected too.
          await until(
            () => heard.slice(backAt).some((t) => t.includes('shop.OrderPlaced')),
            'a signal published after the restart',
            10_000,
          );
          const restartedAt = fired.length;
          await until(
            () => fired.length >= restartedAt + 12,
            'events fired after the restart',
            10_000,
          );
          streaming = false;
          await stream;

          await until(
            async () => {
              const now = await rows();
              return now.length === fired.length && now.every((r) => r.status === 'succeeded');
            },
            'every event to be delivered after the broker is back',
            30_000,
          );
          const after = await rows();
          // Retried, not dead-lettered: some rows succeeded after failed attempts.
          expect(after.filter((r) => r.attempts >= 2).length).toBeGreaterThan(0);

          const a = await admin();
          const got: string[] = [];
          for (;;) {
            const m = await a.channel.get(queue, { noAck: true });
            if (m === false) break;
            got.push(m.properties.messageId as string);
          }
          await a.channel.deleteQueue(queue);
          await a.channel.deleteExchange(exchange);
          await a.model.close();

          const ids = fired.map((f) => f.id);
          // Nothing lost: every event is in the queue, those the broker confirmed before it
          // stopped (recorded sent, never sent again) included: they survived the restart.
          expect([...new Set(got)].sort()).toEqual([...ids].sort());
          const confirmedBefore = fired.filter((f) => sentBeforeStop.has(f.sequence));
          expect(confirmedBefore.length).toBeGreaterThanOrEqual(12);
          for (const f of confirmedBefore) expect(got.filter((id) => id === f.id)).toHaveLength(1);
          // At least once: a message the broker took but had not confirmed when it went away
          // is sent again, so an event of the outage may arrive twice; never one missing.
          // In order per key, by each event's first arrival.
          const firsts = [...new Set(got)];
          for (const key of ['o-0', 'o-1', 'o-2', 'o-3'])
            expect(firsts.filter((id) => fired.find((f) => f.id === id)?.key === key)).toEqual(
              fired.filter((f) => f.key === key).map((f) => f.id),
            );
          // The wakeup reconnected; it never gave up.
          expect(lines.filter((l) => l.level === 'error')).toEqual([]);
          expect(lines.some((l) => l.message.includes('guest:guest'))).toBe(false);
        } finally {
          streaming = false;
          await stream.catch(() => {});
          stop.abort();
          await relay.catch(() => {});
          await stopListening();
          await outbox.close();
          await wakeup.close();
        }
      }, 120_000);
    });
  });
});
