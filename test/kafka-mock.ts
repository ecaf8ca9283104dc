import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { connect } from 'node:net';

/**
 * Kafka for the tests (vitest's global setup calls this): the cluster named by
 * `OUTBOX_TEST_KAFKA_BROKERS` (a real one, or the mock `.ci/run` started), else
 * librdkafka's mock cluster started here from `kcat` when it is installed, and stopped at
 * teardown. No broker package installs on these machines; the mock speaks the real Kafka
 * protocol on a TCP port (its limits: docs/transports.md).
 *
 * Resolves to the brokers (comma-separated `host:port`) and a stop function, or to
 * `undefined` brokers with the reason none could be had.
 */
export async function kafkaForTests(): Promise<KafkaForTests> {
  // Vitest runs the global setup once per project, each in a module instance of its own:
  // one mock per process, shared, stopped when its last user stops it.
  const shared = globalThis as { [SHARED]?: { kafka: Promise<KafkaForTests>; users: number } };
  shared[SHARED] ??= { kafka: startKafka(), users: 0 };
  const entry = shared[SHARED];
  entry.users += 1;
  const kafka = await entry.kafka;
  let stopped = false;
  return {
    ...kafka,
    stop() {
      if (stopped) return;
      stopped = true;
      entry.users -= 1;
      if (entry.users === 0) {
        delete shared[SHARED];
        kafka.stop();
      }
    },
  };
}

const SHARED = Symbol.for('outboxkit.test.kafka-mock');

/** The brokers, or why there are none, and how to stop what was started. */
export interface KafkaForTests {
  readonly brokers?: string;
  readonly reason?: string;
  stop(): void;
}

async function startKafka(): Promise<KafkaForTests> {
  const given = process.env.OUTBOX_TEST_KAFKA_BROKERS;
  if (given) {
    const first = given.split(',')[0].trim();
    return (await answers(first))
      ? { brokers: given, stop() {} }
      : { reason: `OUTBOX_TEST_KAFKA_BROKERS=${given} did not answer`, stop() {} };
  }
  if (spawnSync('kcat', ['-V'], { stdio: 'ignore' }).error)
    return {
      reason:
        'OUTBOX_TEST_KAFKA_BROKERS is unset and kcat is not installed (apt-get install -y kcat)',
      stop() {},
    };
  const child: ChildProcess = spawn(
    'kcat',
    [
      '-b',
      '127.0.0.1:1',
      '-X',
      'test.mock.num.brokers=1',
      '-C',
      '-t',
      '__keepalive',
      '-o',
      'end',
      '-q',
      '-u',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const stop = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  const brokers = await new Promise<string | undefined>((resolve) => {
    let text = '';
    const timer = setTimeout(() => resolve(undefined), 10_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const m = /replaced with (\d+\.\d+\.\d+\.\d+:\d+)/.exec(text);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', () => {
      clearTimeout(timer);
      resolve(undefined);
    });
  });
  if (!brokers) {
    stop();
    return { reason: 'the kcat mock cluster did not start', stop() {} };
  }
  return { brokers, stop };
}

/** Whether something accepts TCP connections at `host:port`. */
function answers(address: string): Promise<boolean> {
  const [host, port] = address.split(':');
  return new Promise((resolve) => {
    const socket = connect({ host, port: Number(port) });
    socket.setTimeout(2_000);
    socket.on('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}
