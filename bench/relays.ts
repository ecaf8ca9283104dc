/**
 * Start child processes and talk to them: wait until each is connected, start them
 * together, follow their progress, stop them, collect their reports. Used for outboxkit's
 * relays (`relay-worker.ts`), the bare SQL loops, the peers' workers and the producers.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { childEntry } from './build.js';
import type { ChildMessage, ParentMessage, RelayWorkerOptions } from './protocol.js';

/** The relay process (`relay-worker.ts`) `startRelays` forks, and the drains' own options. */
export const RELAY_WORKER = fileURLToPath(new URL('./relay-worker.ts', import.meta.url));

/** One child process. */
export interface RelayProcess {
  readonly workerId: string;
  /** Resolves with the relay's `done` message (its report) once it stopped. */
  readonly finished: Promise<Extract<ChildMessage, { type: 'done' }>>;
  send(message: ParentMessage): void;
}

/** A group of child processes started together. */
export interface RelayGroup {
  readonly relays: readonly RelayProcess[];
  /** Start every child (they connected already); a producer gets the schedule's start. */
  go(t0Ms?: number): void;
  /** Stop every relay and wait for their reports; kills a relay that does not stop in 15 s. */
  stop(): Promise<Extract<ChildMessage, { type: 'done' }>[]>;
}

/**
 * Fork `count` relays with the same options (each its own worker id) and wait until every
 * one is `ready`. `onMessage` sees every other message (progress, probes).
 */
export function startRelays(
  count: number,
  options: Omit<RelayWorkerOptions, 'workerId'>,
  onMessage: (message: ChildMessage, relay: number) => void,
): Promise<RelayGroup> {
  return startWorkers(RELAY_WORKER, count, (workerId) => ({ ...options, workerId }), onMessage);
}

/**
 * Fork `count` processes of `script` (a .ts file: its tsc build when bench/build.ts made
 * one, else the source through tsx), each with the options
 * `optionsOf(workerId, index)` as its one JSON argument, and wait until every one is
 * `ready`. `onMessage` sees every other message.
 */
export async function startWorkers<T extends { readonly workerId: string }>(
  script: string,
  count: number,
  optionsOf: (workerId: string, index: number) => T,
  onMessage: (message: ChildMessage, index: number) => void,
  name = 'bench-relay',
): Promise<RelayGroup> {
  const entry = childEntry(script);
  const children: ChildProcess[] = [];
  const relays: RelayProcess[] = [];
  const readies: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const workerId = `${name}-${i + 1}`;
    const child = fork(entry.path, [JSON.stringify(optionsOf(workerId, i))], {
      execArgv: [...entry.execArgv, ...relayExecArgv(name, i)],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    children.push(child);
    let onReady: () => void = () => {};
    let onFail: (error: Error) => void = () => {};
    readies.push(
      new Promise<void>((resolve, reject) => {
        onReady = resolve;
        onFail = reject;
      }),
    );
    const finished = new Promise<Extract<ChildMessage, { type: 'done' }>>((resolve, reject) => {
      child.on('message', (message: ChildMessage) => {
        if (message.type === 'ready') onReady();
        else if (message.type === 'done') resolve(message);
        else if (message.type === 'error') {
          const error = new Error(`${workerId} failed: ${message.message}`);
          onFail(error);
          reject(error);
        } else onMessage(message, i);
      });
      child.on('exit', (code, signal) => {
        const error = new Error(`${workerId} exited (code ${code}, signal ${signal})`);
        onFail(error);
        reject(error);
      });
    });
    finished.catch(() => {}); // observed by stop()
    relays.push({
      workerId,
      finished,
      send: (message) => {
        if (child.connected) child.send(message);
      },
    });
  }
  try {
    await Promise.all(readies);
  } catch (error) {
    for (const child of children) child.kill('SIGKILL');
    throw error;
  }
  return {
    relays,
    go: (t0Ms) => {
      for (const r of relays) r.send(t0Ms === undefined ? { type: 'go' } : { type: 'go', t0Ms });
    },
    stop: async () => {
      for (const r of relays) r.send({ type: 'stop' });
      const timers = children.map((child) =>
        setTimeout(() => child.kill('SIGKILL'), 15_000).unref(),
      );
      try {
        return await Promise.all(relays.map((r) => r.finished));
      } finally {
        for (const t of timers) clearTimeout(t);
      }
    },
  };
}

/**
 * `OUTBOX_BENCH_CPU_PROF=dir` writes a V8 CPU profile of each child process there;
 * `OUTBOX_BENCH_NODE_ARGS` adds node flags to every child (`--trace-gc`,
 * `--max-semi-space-size=64`: experiments on the children's runtime).
 */
function relayExecArgv(name: string, index: number): string[] {
  const extra = (process.env.OUTBOX_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const dir = process.env.OUTBOX_BENCH_CPU_PROF;
  if (!dir) return extra;
  return [
    '--cpu-prof',
    `--cpu-prof-dir=${dir}`,
    `--cpu-prof-name=${name}-${index + 1}-${Date.now()}.cpuprofile`,
    ...extra,
  ];
}
