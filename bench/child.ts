/**
 * What every child process of the benchmark shares (relays, bare loops, peers' workers,
 * producers): sending protocol messages, coalescing progress and probe messages to one per
 * event-loop turn (so IPC does not slow a fast run down), and waiting for `go` / `stop`.
 */
import type { ChildMessage, ParentMessage } from './protocol.js';

export function send(message: ChildMessage): void {
  process.send?.(message);
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

/**
 * This process's CPU (user + system, µs) from `go` to `stop`, the timed part and the few
 * idle polls before the parent's stop (a drain's children report it: the client's share of
 * a drain's CPU, beside the database's); undefined before both came.
 */
export function cpuGoToStopUs(): number | undefined {
  if (!cpuAtGo || !cpuAtStop) return undefined;
  return cpuAtStop.user - cpuAtGo.user + (cpuAtStop.system - cpuAtGo.system);
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
        resolve(message);
      }
      if (message.type === 'stop') {
        cpuAtStop ??= process.cpuUsage();
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
