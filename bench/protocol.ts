/**
 * The messages between the benchmark and its child processes (Node IPC): outboxkit's relay
 * processes, the bare SQL loops, the peers' workers and the producers all speak it.
 *
 * parent → child: `go` (start; a producer gets the schedule's start time `t0Ms`), `stop`
 * (abort and exit).
 * child → parent: `ready` (connected, waiting for `go`), `progress` (deliveries done so
 * far), `probe` (a handler started on event n at time t, monotonic ms), `probes` (many of
 * them at once, coalesced per event-loop turn so a fast run is not slowed by IPC, and with
 * `ack` the times the acknowledgements committed), `delivered` (one acknowledgement), `committed` (a
 * producer's COMMIT return times, sent once at the end), `done` (the child's report).
 */
import type { ReceiverKind } from './common.js';
import type { BenchWakeup } from './wakeups.js';

/** The experiments a relay process can patch in. */
export const EXPERIMENTS = ['async-commit-handlers'] as const;
export type Experiment = (typeof EXPERIMENTS)[number];

/** How a relay process is set up, passed as its one argument (JSON). */
export interface RelayWorkerOptions {
  readonly schema: string;
  readonly kind: ReceiverKind;
  readonly workerId: string;
  readonly batchSize: number;
  readonly concurrency: number;
  /** The wakeup on this channel (`wakeup`, default listen-notify), or none: the relay polls. */
  readonly notifyChannel?: string;
  /** Which wakeup listens on `notifyChannel` (bench/wakeups.ts). @defaultValue listen-notify */
  readonly wakeup?: BenchWakeup;
  readonly pollIntervalMs: number;
  /** Start the relay at once instead of waiting for `go` (the latency run). */
  readonly startAtOnce?: boolean;
  /** A proposed src/ change to try, patched in (see bench/experiments/). */
  readonly experiment?: Experiment;
  /** A schema of its own whose backlog the relay drains, untimed, before `ready`. */
  readonly warmupSchema?: string;
}

/** What a bare SQL loop does (bench/bare/worker.ts). */
export type BareMode = 'transport' | 'handler' | 'latency';

/** How a bare SQL loop process is set up (JSON argument). */
export interface BareWorkerOptions {
  readonly mode: BareMode;
  readonly schema: string;
  readonly workerId: string;
  readonly batchSize: number;
  /** Handler mode: connections acknowledging in parallel. */
  readonly concurrency: number;
  /** Latency mode: the LISTEN channel. */
  readonly notifyChannel?: string;
  /** Latency mode: the poll that backs up a lost NOTIFY. */
  readonly pollIntervalMs: number;
  /** Transport mode: a schema of its own whose backlog the loop drains, untimed, before `ready`. */
  readonly warmupSchema?: string;
}

/** The peers (bench/peers/) and their settings for one run. */
export type PeerSystem = 'graphile' | 'pgboss';

/** How a peer's worker process is set up (JSON argument). */
export interface PeerWorkerOptions {
  readonly system: PeerSystem;
  readonly schema: string;
  readonly workerId: string;
  /** The setting's name as printed ("default", "c10", "batched", "batch500"). */
  readonly setting: string;
  /** graphile-worker: `concurrency`; pg-boss: number of `work()` loops. */
  readonly concurrency: number;
  /** graphile-worker: `localQueue.size` (-1 off); pg-boss: `batchSize`. */
  readonly batchSize: number;
  /** graphile-worker: `completeJobBatchDelay` (-1 off). */
  readonly completeJobBatchDelay?: number;
  /** graphile-worker: `pollInterval` ms; pg-boss: `pollingIntervalSeconds` × 1000. */
  readonly pollIntervalMs: number;
  /** Report each task's start time (the latency runs). */
  readonly probe: boolean;
}

/** The systems a producer writes for: the event row(s) and the wakeup each one reads. */
export type ProducerSystem = 'outboxkit' | 'bare' | 'graphile' | 'pgboss';

/** How a producer process is set up (JSON argument). */
export interface ProducerOptions {
  readonly system: ProducerSystem;
  readonly schema: string;
  readonly workerId: string;
  /** outboxkit and bare: the NOTIFY channel (outboxkit: the `wakeup`'s channel). */
  readonly notifyChannel?: string;
  /** outboxkit: which wakeup signals on `notifyChannel`. @defaultValue listen-notify */
  readonly wakeup?: BenchWakeup;
  /** This producer fires n = index, index + count, index + 2·count, … < total. */
  readonly index: number;
  readonly count: number;
  readonly total: number;
  /** Events per second of all producers together. */
  readonly rate: number;
  /**
   * Stop this long after the schedule's end even if events are left (producers that fell
   * behind would otherwise stretch a run on a slow machine without end).
   */
  readonly graceMs: number;
  /**
   * `synchronous_commit` of the producer's connection (default on): off lets producers
   * reach high rates on a disk whose flushes are slow (a NOTIFYing COMMIT holds
   * PostgreSQL's notify lock through its WAL flush, so they queue one flush each).
   */
  readonly synchronousCommit?: boolean;
  /**
   * outboxkit: how each event is written. `fire` (the default): `outbox.fire()` in a
   * Sequelize transaction, as an application writes. `sql`: the bare producer's one
   * hand-written statement on node-postgres (event, delivery row, NOTIFY), into
   * outboxkit's own tables: the relay's latency at a rate the `fire()` producers cannot
   * reach on two cores beside it, since Sequelize's transaction path costs each of them
   * about twice the bare producer's CPU (bench/README.md).
   */
  readonly statement?: 'fire' | 'sql';
}

export type ParentMessage =
  | { readonly type: 'go'; readonly t0Ms?: number }
  | { readonly type: 'stop' };

export type ChildMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'progress'; readonly delivered: number; readonly atMs: number }
  | { readonly type: 'probe'; readonly n: number; readonly atMs: number }
  | {
      readonly type: 'probes';
      readonly n: readonly number[];
      readonly atMs: readonly number[];
      /** Acknowledgement times (the handler's transaction committed), not start times. */
      readonly ack?: boolean;
    }
  | { readonly type: 'delivered'; readonly n: number; readonly atMs: number }
  | {
      readonly type: 'committed';
      readonly n: readonly number[];
      readonly atMs: readonly number[];
      readonly late: number;
    }
  | {
      readonly type: 'done';
      readonly report: Record<string, number>;
      readonly delivered: number;
    }
  | { readonly type: 'error'; readonly message: string };
