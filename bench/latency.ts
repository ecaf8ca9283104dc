/**
 * Figure 2: commit-to-start latency at a steady rate, for outboxkit, the bare SQL loop and
 * the peers, each woken by the database (LISTEN/NOTIFY; pg-boss polls).
 *
 * In a fresh schema, one consumer process runs: outboxkit's relay with
 * `listenNotifyWakeup()` on a channel of its own (so other runs on the same database do
 * not wake it) and a handler that notes, first thing, when it started; or the bare loop
 * (`bare/worker.ts`, latency mode: LISTEN, claim, "start" when the claim returned); or a
 * peer's worker (`peers/worker.ts`: graphile-worker, whose task notes its start, or
 * pg-boss). Then `producers` processes (`producer-worker.ts`) fire one event per
 * transaction, together `rate` per second on a fixed schedule (each event on its own due
 * time, not "as fast as the last one allows"), and note when each COMMIT returned.
 * latency = start − commit returned, matched by the event's number, on the machine's
 * monotonic clock, which all processes share. The consumers' poll is 1 s, so a missed
 * wakeup shows up as a ~1000 ms outlier rather than hiding (pg-boss: its 0.5 s minimum
 * is its only wakeup). The first `warmupSeconds` are not counted. Producers that cannot
 * keep up (a slow disk's COMMITs, two cores shared) stop 2 s after the schedule's end:
 * `achievedPerSecond` is the rate they reached, `unfired` what they left, `firedLate` how
 * many they fired behind schedule.
 */
import { fileURLToPath } from 'node:url';
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
import { type PeerLatencySetting, preparePeer, startPeerWorkers } from './peers/figures.js';
import { settle } from './pg.js';
import type { BareWorkerOptions, ChildMessage, ProducerOptions } from './protocol.js';
import { type RelayGroup, startRelays, startWorkers } from './relays.js';
import { seedSettled } from './seed.js';
import type { BenchWakeup } from './wakeups.js';

const BARE_WORKER = fileURLToPath(new URL('./bare/worker.ts', import.meta.url));
const PRODUCER = fileURLToPath(new URL('./producer-worker.ts', import.meta.url));

export type LatencySystem = 'outboxkit' | 'bare' | 'graphile' | 'pgboss';

export interface LatencyOptions {
  /** Who consumes (default outboxkit). */
  readonly system?: LatencySystem;
  /** Events per second, all producers together. */
  readonly rate: number;
  /** How long the measured part fires, in seconds. */
  readonly seconds: number;
  /** How long the uncounted warm-up fires first, in seconds. */
  readonly warmupSeconds: number;
  /** Producer processes (default: 1 up to 200 events/s, else 4). */
  readonly producers?: number;
  /** The producers' `synchronous_commit` (default on; see ProducerOptions). */
  readonly producerSynchronousCommit?: boolean;
  /** outboxkit: the wakeup between producers and relay (default listen-notify). */
  readonly wakeup?: BenchWakeup;
  /**
   * outboxkit and the bare loop: settled events (one succeeded delivery each) seeded before
   * the VACUUM (ANALYZE), the history an outbox in service holds within its retention
   * window. Default 0 (a new outbox); `npm run bench` and the compare run pass
   * `--latency-history`, 50,000 unless told. The peers delete a finished job, so their steady
   * state is the empty table they start with.
   */
  readonly history?: number;
  /**
   * outboxkit: how its producers write each event (ProducerOptions.statement): `fire`
   * (default) or `sql`, the bare producer's statement into outboxkit's tables.
   */
  readonly producerStatement?: 'fire' | 'sql';
}

/** The producers a rate gets unless told: one up to 200/s (the first figure's), else 4. */
export function defaultProducers(rate: number): number {
  return rate <= 200 ? 1 : 4;
}

/**
 * The peers' settings in the latency runs: graphile-worker's defaults but 10 workers, as
 * the relay runs 10 handlers (its default 2 s poll backs up its LISTEN); pg-boss polls
 * at its minimum interval, 0.5 s, batches of up to 100.
 */
const PEER_LATENCY: Record<'graphile' | 'pgboss', PeerLatencySetting> = {
  graphile: { setting: 'c10', concurrency: 10, batchSize: -1, pollIntervalMs: 2000 },
  pgboss: { setting: 'poll500ms', concurrency: 1, batchSize: 100, pollIntervalMs: 500 },
};

export async function benchLatency(o: LatencyOptions): Promise<Record<string, unknown>> {
  const system = o.system ?? 'outboxkit';
  const producers = o.producers ?? defaultProducers(o.rate);
  if (o.producerStatement === 'sql' && (o.wakeup ?? 'listen-notify') !== 'listen-notify')
    throw new Error(
      `latency: the sql producers wake the relay by NOTIFY only (wakeup ${o.wakeup} given)`,
    );
  const sequelize = openSequelize(2);
  const schema = newSchemaName();
  const channel = `${schema}_wake`;
  const groups: RelayGroup[] = [];
  try {
    if (system === 'outboxkit' || system === 'bare') {
      const outbox = createOutbox(benchConfig('probe-handler'), {
        sequelize,
        schema,
        wakeup: listenNotifyWakeup({ channel }),
        logger: silentLogger,
      });
      await outbox.migrate();
      await outbox.close();
      await seedSettled(sequelize, schema, o.history ?? 0, "interval '1 hour'");
    } else {
      await preparePeer(system, schema, 0);
    }
    const settleSeconds = await settle(schema);

    const started = new Map<number, number>();
    const acked = new Map<number, number>();
    const onMessage = (message: ChildMessage) => {
      if (message.type === 'probe') started.set(message.n, message.atMs);
      else if (message.type === 'delivered') acked.set(message.n, message.atMs);
      else if (message.type === 'probes') {
        const into = message.ack ? acked : started;
        for (let i = 0; i < message.n.length; i++) into.set(message.n[i], message.atMs[i]);
      }
    };
    const peer = system === 'graphile' || system === 'pgboss' ? PEER_LATENCY[system] : undefined;
    let consumer: RelayGroup;
    if (system === 'outboxkit') {
      consumer = await startRelays(
        1,
        {
          schema,
          kind: 'probe-handler',
          batchSize: 100,
          concurrency: 10,
          notifyChannel: channel,
          wakeup: o.wakeup,
          pollIntervalMs: 1000,
          startAtOnce: true,
        },
        onMessage,
      );
    } else if (system === 'bare') {
      consumer = await startWorkers<BareWorkerOptions>(
        BARE_WORKER,
        1,
        (workerId) => ({
          mode: 'latency',
          schema,
          workerId,
          batchSize: 100,
          concurrency: 1,
          notifyChannel: channel,
          pollIntervalMs: 1000,
        }),
        onMessage,
        'bench-bare',
      );
    } else {
      consumer = await startPeerWorkers(
        system,
        schema,
        { ...peer!, probe: true },
        onMessage,
        'bench-peer',
      );
    }
    groups.push(consumer);

    const total = Math.round(o.rate * (o.warmupSeconds + o.seconds));
    const committed = new Map<number, number>();
    let late = 0;
    const fired = await startWorkers<ProducerOptions>(
      PRODUCER,
      producers,
      (workerId, index) => ({
        system,
        schema,
        workerId,
        notifyChannel: channel,
        wakeup: system === 'outboxkit' ? o.wakeup : undefined,
        index,
        count: producers,
        total,
        rate: o.rate,
        graceMs: 2000,
        synchronousCommit: o.producerSynchronousCommit,
        statement: system === 'outboxkit' ? o.producerStatement : undefined,
      }),
      (message) => {
        if (message.type !== 'committed') return;
        for (let i = 0; i < message.n.length; i++) committed.set(message.n[i], message.atMs[i]);
        late += message.late;
      },
      'bench-producer',
    );
    groups.push(fired);
    const t0 = nowMs() + 100;
    fired.go(t0);
    await Promise.all(fired.relays.map((r) => r.finished));
    // Wait for the last starts (the poll is the floor, so at most ~1 s); the peers report
    // no acknowledgements.
    const acks = system === 'outboxkit' || system === 'bare';
    const deadline = nowMs() + 5000;
    const all = committed.size;
    while ((started.size < all || (acks && acked.size < all)) && nowMs() < deadline)
      await sleep(20);
    await consumer.stop();
    groups.length = 0;

    // Warm-up: the events whose COMMIT returned in the first `warmupSeconds` (by time, not
    // by count, so producers that fell behind still leave a measured part).
    const warmupEnd = t0 + o.warmupSeconds * 1000;
    const toStart: number[] = [];
    const toAck: number[] = [];
    let missing = 0;
    let measured = 0;
    let lastCommit = warmupEnd;
    for (const [n, c] of committed) {
      if (c < warmupEnd) continue;
      measured += 1;
      lastCommit = Math.max(lastCommit, c);
      const s = started.get(n);
      if (s === undefined) {
        missing += 1;
        continue;
      }
      toStart.push(s - c);
      const a = acked.get(n);
      if (a !== undefined) toAck.push(a - c);
    }
    toStart.sort((a, b) => a - b);
    toAck.sort((a, b) => a - b);
    const unfired = total - committed.size;
    // The rate the producers reached after the warm-up (below `rate` when they could not
    // keep up).
    const achieved = measured / ((lastCommit - warmupEnd) / 1000);
    const figure = {
      bench: 'latency',
      system,
      ...(peer ? { setting: peer.setting } : {}),
      receiver:
        system === 'outboxkit' ? 'noop-handler' : system === 'bare' ? 'bare-claim' : 'noop-task',
      wakeup:
        system === 'pgboss'
          ? `poll ${peer?.pollIntervalMs} ms`
          : system === 'outboxkit'
            ? (o.wakeup ?? 'listen-notify')
            : 'listen-notify',
      ...(o.history && (system === 'outboxkit' || system === 'bare') ? { history: o.history } : {}),
      ratePerSecond: o.rate,
      achievedPerSecond: Math.round(achieved),
      producers,
      ...(system === 'outboxkit' && o.producerStatement === 'sql' ? { producer: 'sql' } : {}),
      ...(o.producerSynchronousCommit === false ? { producerSynchronousCommit: 'off' } : {}),
      events: measured,
      ...(unfired > 0 ? { unfired } : {}),
      commitToStartMs: {
        p50: round(quantile(toStart, 0.5)),
        p90: round(quantile(toStart, 0.9)),
        p99: round(quantile(toStart, 0.99)),
        max: round(toStart[toStart.length - 1] ?? Number.NaN),
        min: round(toStart[0] ?? Number.NaN),
      },
      commitToAckMs:
        toAck.length > 0
          ? { p50: round(quantile(toAck, 0.5)), p99: round(quantile(toAck, 0.99)) }
          : undefined,
      missing,
      firedLate: late,
      settleSeconds: round(settleSeconds, 2),
    };
    emit(figure);
    return figure;
  } finally {
    for (const g of groups) await g.stop().catch(() => {});
    await dropSchema(sequelize, schema);
    await sequelize.close();
    note(`latency ${system} at ${o.rate}/s: schema ${schema} dropped`);
  }
}
