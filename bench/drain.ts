/**
 * Figure 1: how fast N relays drain a backlog.
 *
 * In a fresh schema: seed `events` events (one delivery row each, not timed), ANALYZE,
 * start N relay processes and wait until each is connected, then say `go` and time until
 * the relays have recorded every delivery as succeeded (their progress messages, confirmed
 * by counting the rows). events/s = events / that time.
 */
import { createOutbox, silentLogger } from '../src/index.js';
import {
  benchConfig,
  dropSchema,
  emit,
  newSchemaName,
  note,
  nowMs,
  openSequelize,
  type ReceiverKind,
  round,
} from './common.js';
import type { Experiment } from './protocol.js';
import { startRelays } from './relays.js';
import { analyze, seedBacklog } from './seed.js';

export interface DrainOptions {
  readonly kind: ReceiverKind;
  readonly relays: number;
  readonly events: number;
  readonly batchSize: number;
  readonly concurrency: number;
  readonly experiment?: Experiment;
}

export async function benchDrain(o: DrainOptions): Promise<Record<string, unknown>> {
  const sequelize = openSequelize(2);
  const schema = newSchemaName();
  try {
    const outbox = createOutbox(benchConfig(o.kind), {
      sequelize,
      schema,
      wakeup: null,
      logger: silentLogger,
    });
    await outbox.migrate();
    const seedSeconds = await seedBacklog(outbox, o.events);
    await analyze(sequelize, schema);

    const delivered = new Array<number>(o.relays).fill(0);
    let doneAt = 0;
    let onAllDone: () => void = () => {};
    const allDone = new Promise<void>((resolve) => {
      onAllDone = resolve;
    });
    const group = await startRelays(
      o.relays,
      {
        schema,
        kind: o.kind,
        batchSize: o.batchSize,
        concurrency: o.concurrency,
        pollIntervalMs: 50,
        experiment: o.experiment,
      },
      (message, relay) => {
        if (message.type !== 'progress') return;
        delivered[relay] = message.delivered;
        if (doneAt === 0 && delivered.reduce((a, b) => a + b, 0) >= o.events) {
          doneAt = message.atMs;
          onAllDone();
        }
      },
    );
    const startedAt = nowMs();
    group.go();
    const timeout = setTimeout(() => onAllDone(), 240_000);
    try {
      // A relay that stops or fails before the backlog is drained ends the run at once.
      await Promise.race([
        allDone,
        ...group.relays.map((r) =>
          r.finished.then(() => {
            throw new Error(`relay ${r.workerId} stopped before the backlog was drained`);
          }),
        ),
      ]);
    } finally {
      clearTimeout(timeout);
    }
    const reports = await group.stop();
    const counts = await outbox.countDeliveries();
    await outbox.close();
    if (doneAt === 0 || counts.succeeded !== o.events) {
      throw new Error(
        `drain of ${o.kind} by ${o.relays} relays did not finish: ${JSON.stringify(counts)}`,
      );
    }
    const seconds = (doneAt - startedAt) / 1000;
    const figure = {
      bench: 'drain',
      receiver: o.kind,
      relays: o.relays,
      events: o.events,
      batchSize: o.batchSize,
      concurrency: o.concurrency,
      ...(o.experiment ? { experiment: o.experiment } : {}),
      seconds: round(seconds),
      eventsPerSecond: Math.round(o.events / seconds),
      perRelay: reports.map((r) => r.delivered),
      claims: reports.reduce((a, r) => a + (r.report.passes ?? 0), 0),
      seedSeconds: round(seedSeconds, 2),
    };
    emit(figure);
    return figure;
  } finally {
    await dropSchema(sequelize, schema);
    await sequelize.close();
    note(`drain ${o.kind} x${o.relays}: schema ${schema} dropped`);
  }
}
