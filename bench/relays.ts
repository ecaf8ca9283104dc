/**
 * Start relays as child processes and talk to them: wait until each is connected, start
 * them together, follow their progress, stop them, collect their reports.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildMessage, ParentMessage, RelayWorkerOptions } from './protocol.js';

const WORKER = fileURLToPath(new URL('./relay-worker.ts', import.meta.url));

/** One relay process. */
export interface RelayProcess {
  readonly workerId: string;
  /** Resolves with the relay's `done` message (its report) once it stopped. */
  readonly finished: Promise<Extract<ChildMessage, { type: 'done' }>>;
  send(message: ParentMessage): void;
}

/** A group of relay processes started together. */
export interface RelayGroup {
  readonly relays: readonly RelayProcess[];
  /** Start every relay (they connected already). */
  go(): void;
  /** Stop every relay and wait for their reports; kills a relay that does not stop in 15 s. */
  stop(): Promise<Extract<ChildMessage, { type: 'done' }>[]>;
}

/**
 * Fork `count` relays with the same options (each its own worker id) and wait until every
 * one is `ready`. `onMessage` sees every other message (progress, probes).
 */
export async function startRelays(
  count: number,
  options: Omit<RelayWorkerOptions, 'workerId'>,
  onMessage: (message: ChildMessage, relay: number) => void,
): Promise<RelayGroup> {
  const children: ChildProcess[] = [];
  const relays: RelayProcess[] = [];
  const readies: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const workerId = `bench-relay-${i + 1}`;
    const child = fork(WORKER, [JSON.stringify({ ...options, workerId })], {
      execArgv: ['--import', 'tsx', ...relayExecArgv(i)],
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
          const error = new Error(`relay ${workerId} failed: ${message.message}`);
          onFail(error);
          reject(error);
        } else onMessage(message, i);
      });
      child.on('exit', (code, signal) => {
        const error = new Error(`relay ${workerId} exited (code ${code}, signal ${signal})`);
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
    go: () => {
      for (const r of relays) r.send({ type: 'go' });
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

/** `OUTBOX_BENCH_CPU_PROF=dir` writes a V8 CPU profile of each relay process there. */
function relayExecArgv(index: number): string[] {
  const dir = process.env.OUTBOX_BENCH_CPU_PROF;
  if (!dir) return [];
  return [
    '--cpu-prof',
    `--cpu-prof-dir=${dir}`,
    `--cpu-prof-name=relay-${index + 1}-${Date.now()}.cpuprofile`,
  ];
}
