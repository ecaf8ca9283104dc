/**
 * What every benchmark shares: the PostgreSQL connection, a fresh schema per run, the
 * benchmark's outbox declarations, timing and percentile helpers, and the JSON line printer.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { Sequelize } from 'sequelize';
import { z } from 'zod';
import {
  defineOutbox,
  event,
  type OutboxConfig,
  type OutboxEvent,
  receiver,
} from '../src/index.js';

/** Where the benchmarks connect: `OUTBOX_BENCH_PG_URL`, else the local test database. */
export const PG_URL =
  process.env.OUTBOX_BENCH_PG_URL ??
  process.env.OUTBOX_TEST_PG_URL ??
  'postgres://postgres@127.0.0.1:5432/test';

/** A Sequelize on the benchmark database, quiet unless `logging` is given. */
export function openSequelize(
  poolMax: number,
  logging: false | ((sql: string, options?: unknown) => void) = false,
): Sequelize {
  return new Sequelize(PG_URL, { logging, pool: { max: poolMax, min: 0 } });
}

/** A fresh schema name for one run: `bench_<hex>`. */
export function newSchemaName(): string {
  return `bench_${randomBytes(5).toString('hex')}`;
}

/** Drop a run's schema and everything in it; never throws (cleanup must always finish). */
export async function dropSchema(sequelize: Sequelize, schema: string): Promise<void> {
  await sequelize.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch((error: unknown) => {
    process.stderr.write(`bench: could not drop schema ${schema}: ${String(error)}\n`);
  });
}

/** The receivers a drain or latency run can use. */
export const RECEIVER_KINDS = [
  'noop-delivery',
  'noop-deliver-batch',
  'noop-handler',
  'probe-handler',
  'fanout10-deliver-batch',
] as const;
export type ReceiverKind = (typeof RECEIVER_KINDS)[number];

export function isReceiverKind(value: string): value is ReceiverKind {
  return (RECEIVER_KINDS as readonly string[]).includes(value);
}

/** The benchmark's one event: a small payload with a sequence number. */
export const Ping = event({ schema: z.object({ n: z.number().int(), note: z.string() }) });

/**
 * Whether a receiver kind is a handler's (its deliveries are told one by one, when each
 * commits), not a transport's (a batch recorded at once).
 */
export function isHandlerKind(kind: ReceiverKind): boolean {
  return kind === 'noop-handler' || kind === 'probe-handler';
}

/** How many delivery rows one event of a receiver kind writes. */
export function rowsPerEvent(kind: ReceiverKind): number {
  return kind === 'fanout10-deliver-batch' ? 10 : 1;
}

const TEN_TARGETS = Array.from({ length: 10 }, (_, i) => `endpoint-${i}`);

/** What a probe handler reports when it starts on an event. */
export type ProbeListener = (event: OutboxEvent, deliveryId: string) => void;

/**
 * The outbox of a drain or latency run: one event, one receiver of the given kind.
 * - `noop-delivery`: a transport with a per-event `deliver` that does nothing;
 * - `noop-deliver-batch`: a transport whose `deliverBatch` takes the whole batch in one call;
 * - `noop-handler`: a handler (runs in a transaction with its acknowledgement) that does nothing;
 * - `probe-handler`: a handler that calls `probe` first thing (the latency run's clock);
 * - `fanout10-deliver-batch`: `noop-deliver-batch` as a fan-out of ten targets, so each
 *   event owes ten delivery rows (the drain counts rows).
 */
export function benchConfig(kind: ReceiverKind, probe?: ProbeListener): OutboxConfig {
  switch (kind) {
    case 'noop-delivery':
      return defineOutbox({
        events: { 'bench.Ping': Ping },
        receivers: { noop: receiver('bench.Ping', { deliver: async () => {} }) },
      });
    case 'noop-deliver-batch':
      return defineOutbox({
        events: { 'bench.Ping': Ping },
        receivers: {
          noop: receiver('bench.Ping', {
            deliver: { name: 'noop-batch', deliverBatch: async () => undefined },
          }),
        },
      });
    case 'fanout10-deliver-batch':
      return defineOutbox({
        events: { 'bench.Ping': Ping },
        receivers: {
          noop: receiver('bench.Ping', {
            targets: () => TEN_TARGETS,
            deliver: { name: 'noop-batch', deliverBatch: async () => undefined },
          }),
        },
      });
    case 'noop-handler':
      return defineOutbox({
        events: { 'bench.Ping': Ping },
        receivers: { noop: receiver('bench.Ping', { handle: async () => {} }) },
      });
    case 'probe-handler':
      return defineOutbox({
        events: { 'bench.Ping': Ping },
        receivers: {
          noop: receiver('bench.Ping', {
            handle: async (e, context) => {
              probe?.(e, String(context.deliveryId));
            },
          }),
        },
      });
  }
}

/** Milliseconds on the monotonic clock, shared by every process of the machine. */
export function nowMs(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000;
}

/** The q-quantile (0..1) of sorted numbers, nearest-rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

/** A command-line option that must be a whole number of at least `min`: its value, else an error naming it. */
export function wholeNumberOption(name: string, text: string, min = 0): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n) || n < min)
    throw new Error(`--${name} must be a whole number ≥ ${min} (got ${text})`);
  return n;
}

/** Round to a few decimals for printing. */
export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Fields every JSON line carries from now on (the compare run's `round`). */
const emitContext: Record<string, unknown> = {};

/** Add `fields` to every JSON line printed after this (`undefined` removes one). */
export function setEmitContext(fields: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) delete emitContext[k];
    else emitContext[k] = v;
  }
}

/**
 * Print one figure as one JSON line on stdout, with the machine's one-minute load average
 * when it was taken (other work on a 2-core machine moves every figure).
 */
export function emit(figure: Record<string, unknown>): void {
  process.stdout.write(
    `${JSON.stringify({ ...figure, ...emitContext, load1m: round(loadavg()[0], 2) })}\n`,
  );
}

/** Print a note on stderr (progress, plans): stdout stays one JSON line per figure. */
export function note(text: string): void {
  process.stderr.write(`${text}\n`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
