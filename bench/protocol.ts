/**
 * The messages between the benchmark and its relay processes (Node IPC).
 *
 * parent → child: `go` (start the relay), `stop` (abort it and exit).
 * child → parent: `ready` (connected, waiting for `go`), `progress` (deliveries done so
 * far), `probe` (a handler started on event n at time t, monotonic ms), `delivered` (the
 * acknowledgement of event n committed at time t), `done` (the relay's report).
 */
import type { ReceiverKind } from './common.js';

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
  /** `listen-notify` on this channel, or no wakeup (the relay polls). */
  readonly notifyChannel?: string;
  readonly pollIntervalMs: number;
  /** Start the relay at once instead of waiting for `go` (the latency run). */
  readonly startAtOnce?: boolean;
  /** A proposed src/ change to try, patched in (see bench/experiments/). */
  readonly experiment?: Experiment;
}

export type ParentMessage = { readonly type: 'go' } | { readonly type: 'stop' };

export type ChildMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'progress'; readonly delivered: number; readonly atMs: number }
  | { readonly type: 'probe'; readonly n: number; readonly atMs: number }
  | { readonly type: 'delivered'; readonly n: number; readonly atMs: number }
  | {
      readonly type: 'done';
      readonly report: Record<string, number>;
      readonly delivered: number;
    }
  | { readonly type: 'error'; readonly message: string };
