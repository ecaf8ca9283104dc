/**
 * A RabbitMQ node of a test's own, beside the shared broker on 5672 (which other test
 * files use at the same time and which is never stopped): its own node name, AMQP and
 * distribution ports on 127.0.0.1, and its database, logs, config, plugins file and Erlang
 * cookie in a temp directory, so the test can stop it for real and start it again on the
 * same data.
 *
 * Why a second node "did not start" before: Debian's `/usr/sbin/rabbitmq-server` is a
 * wrapper that, run as root, re-runs the real script as the `rabbitmq` user (`su rabbitmq`),
 * and that user cannot enter a temp directory root made (`mkdtemp` is mode 0700): the node
 * dies at boot with `failed_to_create_feature_flags_file_directory`, and with `-detached`
 * the wrapper still exits 0 and the error goes nowhere. The wrapper also reads
 * `/etc/rabbitmq/rabbitmq-env.conf`, whose `NODENAME=rabbit@localhost` is the shared
 * broker's. So this runs the real script (`/usr/lib/rabbitmq/bin/rabbitmq-server` on
 * Debian, else `rabbitmq-server` on the PATH) as the test's own user, as a child process,
 * with an empty env file of its own and `HOME` in the temp directory (Erlang makes the
 * cookie there; nothing here needs `rabbitmqctl`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  closeSync,
  constants,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import amqp from 'amqplib';

/** A free TCP port on 127.0.0.1 (free when asked: the node binds it moments later). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The real `rabbitmq-server` script, or `undefined` when RabbitMQ is not installed:
 * `OUTBOX_TEST_RABBITMQ_SERVER`, else Debian's `/usr/lib/rabbitmq/bin/rabbitmq-server`
 * (not `/usr/sbin`'s wrapper, see above), else the first `rabbitmq-server` on the PATH.
 */
export function rabbitmqServerScript(): string | undefined {
  const candidates = [
    process.env.OUTBOX_TEST_RABBITMQ_SERVER,
    '/usr/lib/rabbitmq/bin/rabbitmq-server',
    ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'rabbitmq-server')),
  ];
  return candidates.find((path): path is string => !!path && executable(path));
}

export interface PrivateRabbitmq {
  /** `amqp://guest:guest@127.0.0.1:<port>`: the node's own port, never 5672. */
  readonly url: string;
  readonly nodename: string;
  readonly port: number;
  /** Start the node (its data kept from any earlier run) and wait until AMQP answers. */
  start(): Promise<void>;
  /**
   * Stop the node: `'graceful'` sends SIGTERM, which the script passes to the Erlang VM
   * and RabbitMQ shuts down cleanly (clients get a connection.close); `'kill'` sends
   * SIGKILL to its whole process group (a crash: sockets simply drop). Resolves once it
   * has exited.
   */
  stop(how?: 'graceful' | 'kill'): Promise<void>;
  /** The end of the node's log, for a failure message. */
  logTail(lines?: number): string;
  /** Kill the node if it runs and remove its directory. Safe to call twice. */
  cleanup(): Promise<void>;
}

/** Everything RabbitMQ reads from the environment, so an inherited one cannot leak in. */
const SCRUBBED = /^(RABBITMQ_|ERL_|NODENAME$|NODE_PORT$|CONFIG_FILE$)/;

export async function privateRabbitmq(
  script: string,
  options: { startTimeoutMs?: number } = {},
): Promise<PrivateRabbitmq> {
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const dir = mkdtempSync(join(tmpdir(), 'outbox-rabbitmq-'));
  const port = await freePort();
  let distPort = await freePort();
  while (distPort === port) distPort = await freePort();
  const nodename = `outboxkit-restart-${process.pid}-${randomBytes(3).toString('hex')}@localhost`;
  const logFile = join(dir, 'node.out');
  mkdirSync(join(dir, 'mnesia'));
  mkdirSync(join(dir, 'log'));
  writeFileSync(
    join(dir, 'rabbitmq.conf'),
    [
      `listeners.tcp.default = 127.0.0.1:${port}`,
      'log.console = true',
      'log.console.level = info',
      'log.file = false',
      '',
    ].join('\n'),
  );
  writeFileSync(join(dir, 'enabled_plugins'), '[].\n'); // no management plugin, no others
  writeFileSync(join(dir, 'rabbitmq-env.conf'), '# empty: not /etc/rabbitmq/rabbitmq-env.conf\n');

  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !SCRUBBED.test(k)),
  );
  Object.assign(env, {
    HOME: dir, // Erlang keeps its cookie in $HOME/.erlang.cookie
    RABBITMQ_NODENAME: nodename,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: join(dir, 'log'),
    RABBITMQ_PID_FILE: join(dir, 'node.pid'),
    RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq.conf'),
    RABBITMQ_ADVANCED_CONFIG_FILE: join(dir, 'advanced.config'), // absent: none
    RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
    RABBITMQ_CONF_ENV_FILE: join(dir, 'rabbitmq-env.conf'),
    // Erlang distribution on loopback only, like the shared broker's.
    ERL_EPMD_ADDRESS: '127.0.0.1',
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
  });

  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const url = `amqp://guest:guest@127.0.0.1:${port}`;

  /** Signal the node's whole process group (the script, the VM and its port programs). */
  const killGroup = (sig: NodeJS.Signals | 0): boolean => {
    if (child?.pid === undefined) return false;
    try {
      process.kill(-child.pid, sig);
      return true;
    } catch {
      return false; // ESRCH: nothing of it is left
    }
  };
  /** Until nothing of the group is left: the port and the database are free again. */
  const reap = async () => {
    for (let i = 0; killGroup(0); i++) {
      if (i >= 20) killGroup('SIGKILL');
      await new Promise((r) => setTimeout(r, 50));
    }
    child = undefined;
  };
  // A worker that dies without running afterAll still takes its node with it.
  const onExit = () => killGroup('SIGKILL');
  process.once('exit', onExit);

  const logTail = (lines = 30) => {
    try {
      return readFileSync(logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  };

  const answers = async () => {
    try {
      const model = await amqp.connect(url, { timeout: 1_000 });
      model.on('error', () => {});
      await model.close();
      return true;
    } catch {
      return false;
    }
  };

  return {
    url,
    nodename,
    port,
    logTail,
    async start() {
      if (child) throw new Error(`${nodename} is already running`);
      const out = openSync(logFile, 'a');
      try {
        child = spawn(script, [], {
          cwd: dir,
          env,
          // Its own process group, so a kill reaches the VM too, not only the script.
          detached: true,
          stdio: ['ignore', out, out],
        });
      } finally {
        closeSync(out);
      }
      const running = child;
      let spawnError: Error | undefined;
      exited = new Promise<void>((resolve) => {
        running.once('exit', () => resolve());
        running.once('error', (error) => {
          spawnError = error; // could not run the script at all: no 'exit' follows
          resolve();
        });
      });
      const deadline = Date.now() + startTimeoutMs;
      while (Date.now() < deadline) {
        if (spawnError) {
          child = undefined;
          throw spawnError;
        }
        if (running.exitCode !== null || running.signalCode !== null) {
          await reap();
          throw new Error(
            `RabbitMQ node ${nodename} exited at start (${running.exitCode ?? running.signalCode}):\n${logTail()}`,
          );
        }
        if (await answers()) return;
        await new Promise((r) => setTimeout(r, 200));
      }
      killGroup('SIGKILL');
      await reap();
      throw new Error(
        `RabbitMQ node ${nodename} did not answer on ${port} within ${startTimeoutMs} ms:\n${logTail()}`,
      );
    },
    async stop(how = 'graceful') {
      const running = child;
      if (!running) return;
      if (how === 'kill') killGroup('SIGKILL');
      else running.kill('SIGTERM'); // the script traps it and stops the VM cleanly
      const timer = setTimeout(() => killGroup('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
      await reap();
    },
    async cleanup() {
      killGroup('SIGKILL');
      await exited;
      await reap();
      process.removeListener('exit', onExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
