/**
 * Figure 1: how fast N relays drain a backlog, and the same for the bare SQL loops.
 *
 * In a fresh schema: seed `events` events (one delivery row each, not timed), VACUUM
 * (ANALYZE) the tables and CHECKPOINT, start N relay processes (or N bare loops,
 * `bare/worker.ts`, over the same tables and rows) and wait until each is connected, then
 * say `go` and time until they have recorded every delivery as succeeded (their progress
 * messages, confirmed by counting the rows). events/s = events / that time.
 *
 * `timeDrain` is the clock every drain shares, the peers' too (`peers/figures.ts`).
 */
import { fileURLToPath } from 'node:url';
import { createOutbox, silentLogger } from '../src/index.js';
import {
  benchConfig,
  dropSchema,
  emit,
  isHandlerKind,
  newSchemaName,
  note,
  nowMs,
  openSequelize,
  type ReceiverKind,
  round,
  rowsPerEvent,
  sleep,
} from './common.js';
import { postgresCpuByPid, postgresCpuSince } from './experiments/proc-cpu.js';
import { settle } from './pg.js';
import type {
  BareWorkerOptions,
  ChildMessage,
  Experiment,
  RelayWorkerOptions,
} from './protocol.js';
import { RELAY_WORKER, type RelayGroup, startWorkers } from './relays.js';
import { seedBacklog } from './seed.js';

const BARE_WORKER = fileURLToPath(new URL('./bare/worker.ts', import.meta.url));

/** outboxkit's receivers, or a bare SQL loop (`bare-transport`, `bare-handler`). */
export type DrainKind = ReceiverKind | 'bare-transport' | 'bare-handler';

export interface DrainOptions {
  readonly kind: DrainKind;
  readonly relays: number;
  readonly events: number;
  readonly batchSize: number;
  readonly concurrency: number;
  readonly experiment?: Experiment;
  /**
   * Transport drains (outboxkit's and the bare loop's): each process first drains a backlog
   * of this many events of its own (a schema of its own, untimed, before `ready`), so the
   * timed drain measures a warm process (JIT-compiled code, open pool connections), as a
   * relay in service is. A cold process spends its first ~130 ms compiling: a fixed cost
   * that is most of the difference between outboxkit's and the bare loop's four-relay
   * figure when each process drains only 12,500 events (bench/README.md, "Measured here
   * (issue 7, warm processes and a handler that starts before its connection)"). Handler
   * drains compare with the peers, whose workers have no warm-up, so they run cold.
   * `npm run bench:compare` warms each process with 25,000 events: after 5,000 (its first
   * default) a four-relay `deliver` drain still spent 17 µs of client CPU per event, after
   * 25,000 14 µs, after 50,000 13.7 (bench/README.md, "Measured here (issue 7, a `deliver`
   * row awaited in its worker; 2026-12-03 evening)").
   * @defaultValue 0
   */
  readonly warmupEvents?: number;
}

/** Whether a drain kind is a transport's (outboxkit's or the bare loop's). */
function isTransportDrain(kind: DrainKind): boolean {
  return kind === 'bare-transport' || (kind !== 'bare-handler' && !isHandlerKind(kind));
}

export async function benchDrain(o: DrainOptions): Promise<Record<string, unknown>> {
  const sequelize = openSequelize(2);
  const schema = newSchemaName();
  const bare = o.kind === 'bare-transport' || o.kind === 'bare-handler';
  const warmupSchemas: string[] = [];
  // The bare loops read the same tables, seeded the same way (the receiver is not read).
  const outboxIn = (name: string) =>
    createOutbox(benchConfig(bare ? 'noop-delivery' : o.kind), {
      sequelize,
      schema: name,
      wakeup: null,
      logger: silentLogger,
    });
  try {
    const outbox = outboxIn(schema);
    await outbox.migrate();
    const warmupEvents = isTransportDrain(o.kind) ? (o.warmupEvents ?? 0) : 0;
    if (warmupEvents > 0) {
      for (let i = 0; i < o.relays; i++) {
        const warmupSchema = newSchemaName();
        warmupSchemas.push(warmupSchema);
        const warm = outboxIn(warmupSchema);
        await warm.migrate();
        await seedBacklog(warm, warmupEvents);
        await warm.close();
      }
    }
    const seedSeconds = await seedBacklog(outbox, o.events);
    const settleSeconds = await settle(schema);

    const rows = o.events * (bare ? 1 : rowsPerEvent(o.kind as ReceiverKind));
    const tracker = drainTracker(rows);
    const group = bare
      ? await startWorkers<BareWorkerOptions>(
          BARE_WORKER,
          o.relays,
          (workerId, i) => ({
            mode: o.kind === 'bare-transport' ? 'transport' : 'handler',
            schema,
            workerId,
            batchSize: o.batchSize,
            concurrency: o.concurrency,
            pollIntervalMs: 50,
            warmupSchema: warmupSchemas[i],
          }),
          tracker.onMessage,
          'bench-bare',
        )
      : await startWorkers<RelayWorkerOptions>(
          RELAY_WORKER,
          o.relays,
          (workerId, i) => ({
            schema,
            workerId,
            kind: o.kind as ReceiverKind,
            batchSize: o.batchSize,
            concurrency: o.concurrency,
            pollIntervalMs: 50,
            experiment: o.experiment,
            warmupSchema: warmupSchemas[i],
          }),
          tracker.onMessage,
        );
    const { seconds, reports, postgresCpuSeconds } = await timeDrain(
      group,
      tracker,
      `${o.kind} x${o.relays}`,
    );
    const clientCpuUs = sum(reports, 'cpuUs');
    const counts = await outbox.countDeliveries();
    await outbox.close();
    if (counts.succeeded !== rows) {
      throw new Error(
        `drain of ${o.kind} by ${o.relays} processes did not finish: ${JSON.stringify(counts)}`,
      );
    }
    const figure = {
      bench: 'drain',
      system: bare ? 'bare' : 'outboxkit',
      receiver: o.kind,
      relays: o.relays,
      events: o.events,
      deliveries: rows,
      batchSize: o.batchSize,
      concurrency: o.concurrency,
      ...(o.experiment ? { experiment: o.experiment } : {}),
      seconds: round(seconds),
      eventsPerSecond: Math.round(o.events / seconds),
      deliveriesPerSecond: Math.round(rows / seconds),
      perRelay: reports.map((r) => r.delivered),
      claims: reports.reduce((a, r) => a + (r.report.passes ?? 0), 0),
      // Where the drain's CPU went, per event: every relay process (from go to stop) and
      // every postgres process (from go to done). On a machine the drain saturates, their
      // sum per event sets the rate.
      clientCpuUsPerEvent: round(clientCpuUs / o.events, 2),
      // The kernel's part of it (system calls).
      clientSysUsPerEvent: round(sum(reports, 'sysUs') / o.events, 2),
      postgresCpuUsPerEvent: round((postgresCpuSeconds * 1e6) / o.events, 2),
      // The relay processes' garbage collection pauses from go to stop (part of their CPU).
      clientGcUsPerEvent: round((sum(reports, 'gcMs') * 1000) / o.events, 2),
      clientMajorGcMs: reports.map((r) => r.report.gcMajorMs ?? Number.NaN),
      seedSeconds: round(seedSeconds, 2),
      settleSeconds: round(settleSeconds, 2),
      ...(warmupEvents > 0 ? { warmupEventsPerProcess: warmupEvents } : {}),
    };
    emit(figure);
    return figure;
  } finally {
    await dropSchema(sequelize, schema);
    for (const w of warmupSchemas) await dropSchema(sequelize, w);
    await sequelize.close();
    note(`drain ${o.kind} x${o.relays}: schema ${schema} dropped`);
  }
}

/** Adds up the children's progress messages; `allDone` once they reach `events`. */
export interface DrainTracker {
  readonly onMessage: (message: ChildMessage, index: number) => void;
  readonly allDone: Promise<void>;
  /** When the progress added up to `events` (monotonic ms), 0 before. */
  readonly doneAt: number;
}

export function drainTracker(events: number): DrainTracker {
  const delivered: number[] = [];
  let doneAt = 0;
  let onAllDone: () => void = () => {};
  const allDone = new Promise<void>((resolve) => {
    onAllDone = resolve;
  });
  return {
    onMessage: (message, index) => {
      if (message.type !== 'progress') return;
      delivered[index] = message.delivered;
      if (doneAt === 0 && delivered.reduce((a, b) => a + (b ?? 0), 0) >= events) {
        doneAt = message.atMs;
        onAllDone();
      }
    },
    allDone,
    get doneAt() {
      return doneAt;
    },
  };
}

/**
 * Say `go` to a group of connected drainers and time until their progress reaches the
 * tracker's total; then, with `confirm` (the peers, whose progress counts task calls
 * before their completion is written), poll it every 5 ms until the database agrees and
 * stop the clock there. A child that stops or fails first ends the run at once.
 */
export async function timeDrain(
  group: RelayGroup,
  tracker: DrainTracker,
  label: string,
  confirm?: () => Promise<boolean>,
  timeoutMs = 300_000,
): Promise<{
  seconds: number;
  reports: Extract<ChildMessage, { type: 'done' }>[];
  /** CPU seconds of every postgres process from `go` to done (see experiments/proc-cpu.ts). */
  postgresCpuSeconds: number;
}> {
  const postgresAtGo = postgresCpuByPid();
  const startedAt = nowMs();
  group.go();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      tracker.allDone,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`drain ${label}: not done after ${timeoutMs / 1000} s`)),
          timeoutMs,
        );
      }),
      ...group.relays.map((r) =>
        r.finished.then(() => {
          throw new Error(`${r.workerId} stopped before the backlog was drained`);
        }),
      ),
    ]);
    let doneAt = tracker.doneAt;
    if (confirm) {
      const deadline = nowMs() + 60_000;
      while (!(await confirm())) {
        if (nowMs() > deadline) throw new Error(`drain ${label}: completions never written`);
        await sleep(5);
      }
      doneAt = nowMs();
    }
    // Read before the stop: a backend whose connection closes leaves /proc, its CPU with it.
    const postgresCpuSeconds = postgresCpuSince(postgresAtGo);
    const reports = await group.stop();
    return { seconds: (doneAt - startedAt) / 1000, reports, postgresCpuSeconds };
  } catch (error) {
    await group.stop().catch(() => {});
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** The children's reports' `key`, summed (NaN when one did not say). */
function sum(reports: readonly { report: Record<string, number> }[], key: string): number {
  return reports.reduce((a, r) => a + (r.report[key] ?? Number.NaN), 0);
}
