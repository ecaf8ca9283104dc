/**
 * What every child process of the benchmark shares (relays, bare loops, peers' workers,
 * producers): sending protocol messages, coalescing progress and probe messages to one per
 * event-loop turn (so IPC does not slow a fast run down), and waiting for `go` / `stop`.
 */
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { ChildMessage, ParentMessage } from './protocol.js';

export function send(message: ChildMessage): void {
  if (message.type === 'ready' && process.env.OUTBOX_BENCH_SETTLE_HEAP !== '0') settleHeap();
  process.send?.(message);
}

/**
 * A full garbage collection before a child says `ready`, in every child of every system:
 * the heap's counterpart of the database's VACUUM + CHECKPOINT before a timed run (pg.ts
 * `settle`). Without it, whether a child's first mark-compact of its start-up's and
 * warm-up's garbage (20-100 ms on this machine) fell inside the timed part or before it
 * depended on how much its start-up allocated (more on tsx than on tsc's build), and moved
 * a 4-process drain by several percent either way. `OUTBOX_BENCH_SETTLE_HEAP=0` skips it.
 */
function settleHeap(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** Counts deliveries and reports the running total at most once per event-loop turn. */
export function progressReporter(nowMs: () => number): {
  add(n: number): void;
  readonly delivered: number;
} {
  let delivered = 0;
  let queued = false;
  return {
    add(n: number) {
      delivered += n;
      if (queued) return;
      queued = true;
      setImmediate(() => {
        queued = false;
        send({ type: 'progress', delivered, atMs: nowMs() });
      });
    },
    get delivered() {
      return delivered;
    },
  };
}

/** Collects (event number, start time) pairs and sends them as one `probes` per turn. */
export function probeReporter(ack = false): {
  add(n: number, atMs: number): void;
  flush(): void;
} {
  let ns: number[] = [];
  let ats: number[] = [];
  let queued = false;
  const flush = () => {
    queued = false;
    if (ns.length === 0) return;
    send({ type: 'probes', n: ns, atMs: ats, ...(ack ? { ack } : {}) });
    ns = [];
    ats = [];
  };
  return {
    add(n: number, atMs: number) {
      ns.push(n);
      ats.push(atMs);
      if (queued) return;
      queued = true;
      setImmediate(flush);
    },
    flush,
  };
}

let cpuAtGo: NodeJS.CpuUsage | undefined;
let cpuAtStop: NodeJS.CpuUsage | undefined;
/** Garbage collection pauses from `go` to `stop` (ms, every kind), and how many. */
const gc = { ms: 0, count: 0, majorMs: 0, stopAt: Number.POSITIVE_INFINITY };

function watchGc(): void {
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      // Entries come a turn or more late: those that began after `stop` are left out.
      if (entry.startTime > gc.stopAt) continue;
      gc.ms += entry.duration;
      gc.count += 1;
      // NODE_PERFORMANCE_GC_MAJOR (mark-compact) is kind 4.
      if ((entry as { detail?: { kind?: number } }).detail?.kind === 4)
        gc.majorMs += entry.duration;
    }
  }).observe({ entryTypes: ['gc'] });
}

/**
 * This process's CPU (user + system, µs) from `go` to `stop`, the timed part and the few
 * idle polls before the parent's stop (a drain's children report it: the client's share of
 * a drain's CPU, beside the database's); undefined before both came.
 */
export function cpuGoToStopUs(): number | undefined {
  if (!cpuAtGo || !cpuAtStop) return undefined;
  return cpuAtStop.user - cpuAtGo.user + (cpuAtStop.system - cpuAtGo.system);
}

/** The kernel's part of {@link cpuGoToStopUs} (system calls: socket reads and writes). */
function sysGoToStopUs(): number | undefined {
  if (!cpuAtGo || !cpuAtStop) return undefined;
  return cpuAtStop.system - cpuAtGo.system;
}

/**
 * This process's garbage collection from `go` to `stop`: the pauses' total (ms), their
 * number and the major (mark-compact) ones' total; undefined before both came. Part of
 * {@link cpuGoToStopUs} (a pause is CPU of the main thread), told apart to see whether a
 * drain's client CPU is its code or its garbage.
 */
function gcGoToStop(): { ms: number; count: number; majorMs: number } | undefined {
  if (!cpuAtGo || !cpuAtStop) return undefined;
  return { ms: round1(gc.ms), count: gc.count, majorMs: round1(gc.majorMs) };
}

/**
 * What a drain's child adds to its `done` report: `cpuUs` ({@link cpuGoToStopUs}), its
 * kernel part `sysUs`, and
 * `gcMs`, `gcCount`, `gcMajorMs` ({@link gcGoToStop}), each only once `go` and `stop` came.
 */
export function cpuReport(): Record<string, number> {
  const cpuUs = cpuGoToStopUs();
  const sysUs = sysGoToStopUs();
  const pauses = gcGoToStop();
  return {
    ...(cpuUs === undefined ? {} : { cpuUs }),
    ...(sysUs === undefined ? {} : { sysUs }),
    ...(pauses === undefined
      ? {}
      : { gcMs: pauses.ms, gcCount: pauses.count, gcMajorMs: pauses.majorMs }),
  };
}

function round1(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/**
 * The parent's orders: `go` resolves with its message, `stop` (or a lost parent) aborts
 * `stopped` and resolves `go` too.
 */
export function parentOrders(): {
  readonly go: Promise<Extract<ParentMessage, { type: 'go' }> | undefined>;
  readonly stopped: AbortSignal;
} {
  const stop = new AbortController();
  const go = new Promise<Extract<ParentMessage, { type: 'go' }> | undefined>((resolve) => {
    process.on('message', (message: ParentMessage) => {
      if (message.type === 'go') {
        cpuAtGo = process.cpuUsage();
        watchGc();
        resolve(message);
      }
      if (message.type === 'stop') {
        if (!cpuAtStop) {
          cpuAtStop = process.cpuUsage();
          gc.stopAt = performance.now();
        }
        stop.abort();
        resolve(undefined);
      }
    });
    process.on('disconnect', () => {
      stop.abort();
      resolve(undefined);
    });
  });
  return { go, stopped: stop.signal };
}

/** Run a child's main: report a failure as an `error` message, then let the process end. */
export function runChild(main: () => Promise<void>): void {
  main().then(
    () => {
      process.disconnect?.();
    },
    (error: unknown) => {
      send({
        type: 'error',
        message: error instanceof Error ? (error.stack ?? error.message) : String(error),
      });
      process.exitCode = 1;
      process.disconnect?.();
    },
  );
}
