/**
 * Figure 2: commit-to-delivery latency at a steady rate, with LISTEN/NOTIFY.
 *
 * In a fresh schema, one relay process runs with `listenNotifyWakeup()` on a channel of its
 * own (so other runs on the same database do not wake it) and a handler that notes, first
 * thing, when it started. This process fires one event per transaction at a steady rate
 * (each on a fixed schedule, not "as fast as the last one allows") and notes when each
 * COMMIT returned. latency = handler start − commit returned, on the machine's monotonic
 * clock, which both processes share. The relay's poll interval is 1 s, so a missed wakeup
 * shows up as a ~1000 ms outlier rather than hiding. A warm-up second is not counted.
 */
import { createOutbox, listenNotifyWakeup, silentLogger } from '../src/index.js';
import {
  benchConfig,
  dropSchema,
  emit,
  newSchemaName,
  note,
  nowMs,
  openSequelize,
  quantile,
  round,
  sleep,
} from './common.js';
import type { ChildMessage } from './protocol.js';
import { startRelays } from './relays.js';

export interface LatencyOptions {
  /** Events per second. */
  readonly rate: number;
  /** How long the measured part fires, in seconds. */
  readonly seconds: number;
  /** How long the uncounted warm-up fires first, in seconds. */
  readonly warmupSeconds: number;
}

export async function benchLatency(o: LatencyOptions): Promise<Record<string, unknown>> {
  const sequelize = openSequelize(4);
  const schema = newSchemaName();
  const channel = `${schema}_wake`;
  try {
    const outbox = createOutbox(benchConfig('probe-handler'), {
      sequelize,
      schema,
      wakeup: listenNotifyWakeup({ channel }),
      logger: silentLogger,
    });
    await outbox.migrate();

    const started = new Map<number, number>();
    const acked = new Map<number, number>();
    const group = await startRelays(
      1,
      {
        schema,
        kind: 'probe-handler',
        batchSize: 100,
        concurrency: 10,
        notifyChannel: channel,
        pollIntervalMs: 1000,
        startAtOnce: true,
      },
      (message: ChildMessage) => {
        if (message.type === 'probe') started.set(message.n, message.atMs);
        else if (message.type === 'delivered') acked.set(message.n, message.atMs);
      },
    );

    const committed = new Map<number, number>();
    const intervalMs = 1000 / o.rate;
    const warmup = Math.round(o.rate * o.warmupSeconds);
    const total = warmup + Math.round(o.rate * o.seconds);
    let late = 0;
    const t0 = nowMs() + 50;
    for (let n = 0; n < total; n++) {
      const due = t0 + n * intervalMs;
      const wait = due - nowMs();
      if (wait > 1) await sleep(wait - 1);
      while (nowMs() < due) {
        // Spin the last millisecond: setTimeout alone fires up to ~1 ms late.
      }
      if (nowMs() - due > intervalMs) late += 1;
      const transaction = await sequelize.transaction();
      await outbox.fire('bench.Ping', { n, note: 'latency' }, { transaction });
      await transaction.commit();
      committed.set(n, nowMs());
    }
    // Wait for the last deliveries (the poll is the floor, so at most ~1 s).
    const deadline = nowMs() + 5000;
    while (acked.size < total && nowMs() < deadline) await sleep(20);
    await group.stop();
    await outbox.close();

    const toStart: number[] = [];
    const toAck: number[] = [];
    let missing = 0;
    for (let n = warmup; n < total; n++) {
      const c = committed.get(n)!;
      const s = started.get(n);
      const a = acked.get(n);
      if (s === undefined || a === undefined) {
        missing += 1;
        continue;
      }
      toStart.push(s - c);
      toAck.push(a - c);
    }
    toStart.sort((a, b) => a - b);
    toAck.sort((a, b) => a - b);
    const figure = {
      bench: 'latency',
      receiver: 'noop-handler',
      wakeup: 'listen-notify',
      ratePerSecond: o.rate,
      events: total - warmup,
      commitToStartMs: {
        p50: round(quantile(toStart, 0.5)),
        p90: round(quantile(toStart, 0.9)),
        p99: round(quantile(toStart, 0.99)),
        max: round(toStart[toStart.length - 1] ?? Number.NaN),
        min: round(toStart[0] ?? Number.NaN),
      },
      commitToAckMs: {
        p50: round(quantile(toAck, 0.5)),
        p99: round(quantile(toAck, 0.99)),
      },
      missing,
      firedLate: late,
    };
    emit(figure);
    return figure;
  } finally {
    await dropSchema(sequelize, schema);
    await sequelize.close();
    note(`latency: schema ${schema} dropped`);
  }
}
