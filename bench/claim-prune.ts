/**
 * The claim time while events pass through and the history is pruned (issue 9's "the claim
 * time with a relay sweeping while 1,000,000 events pass through"): `--only claim-prune`.
 *
 * One relay (`outbox.runRelay()`, the noop-delivery receiver, its own idle sweep off) drains
 * `events` events fed to it in waves of `wave` (seeded set-based, as a producer's commits
 * would land, whenever fewer than a wave are owed), while — with `pruner: true` — a second
 * outbox instance on its own pool runs `pruneEvents({ olderThan: 0s })` in a loop, deleting
 * what the relay delivered batch by batch (its event locks, its last-success writes, its
 * DELETEs) as `outbox prune` or another relay's idle sweep would. With `pruner: false` the
 * history grows to `events` settled events instead: the baseline.
 *
 * `{"bench":"prune","figure":"claim-while-pruning","pruner":…}`: the claim statement's time
 * (`relay:claimed`, the relay's own monotonic measurement, claims that took rows) p50 / p99
 * over the whole run and over its first and last tenth of events, the history at the end,
 * what the pruner deleted, and the run's events per second. Flat from first to last tenth,
 * and close to the baseline, is the goal: the claim reads the owed rows' partial index,
 * never history, and the prune's locks are on settled events no claim wants.
 *
 * The relay, the feeder and the pruner share this process (one event loop, the pruner's work
 * is almost all in PostgreSQL); read `load1m` beside the figures.
 */
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../src/index.js';
import {
  dropSchema,
  emit,
  newSchemaName,
  note,
  openSequelize,
  Ping,
  quantile,
  round,
  sleep,
} from './common.js';
import { startAutovacuumEmulator } from './experiments/autovacuum-emulator.js';
import { openClaimProbe } from './experiments/claim-prune-probe.js';
import { settle } from './pg.js';

export interface ClaimPruneBenchOptions {
  /** Events that pass through the relay. */
  readonly events: number;
  /** Events seeded at a time, whenever fewer than this many are owed. */
  readonly wave: number;
  /**
   * How the history is pruned, one run each, in order: `loop`, a second instance pruning in
   * a loop beside the relay (the worst case); `sweep`, the relay's own idle sweep, every
   * {@link SWEEP_SECONDS} seconds of the relay finding nothing to claim (what production
   * runs); `off`, nothing (the history grows: the baseline).
   */
  readonly pruner: readonly ('loop' | 'sweep' | 'off')[];
  /**
   * Every this many events claimed (and once at the end), what the claim reads in buffers,
   * the tables' dead tuples and autovacuums, the indexes' sizes (issue 9's instrumentation,
   * experiments/claim-prune-probe.ts): one `claim-buffers` line each. 0: none.
   */
  readonly explainEvery?: number;
  /**
   * Storage parameters set on the deliveries table after `migrate()`, before the run
   * (`ALTER TABLE … SET (…)`, e.g. `autovacuum_vacuum_scale_factor=0`), to try a setting
   * before a migration sets it. Empty: the migrations' own.
   */
  readonly deliveriesStorage?: string;
  /**
   * Emulate autovacuum every this many seconds (its naptime) beside the run, for a server
   * running without it (experiments/autovacuum-emulator.ts; the CI server has
   * `autovacuum = off`). 0: none.
   */
  readonly autovacuumNaptime?: number;
}

/** The idle sweep's interval in the `sweep` run (production's default is 300 s). */
const SWEEP_SECONDS = 10;
/** The `sweep` run's pause after each wave is claimed: the relay goes idle, and may sweep. */
const BURST_PAUSE_MS = 200;

/** The `sweep` run's event: deleted once consumed, so the relay's default sweep takes it. */
const Consumed = event({ schema: Ping.schema, retention: 'succeeded' });

const configOf = (sweep: boolean) =>
  defineOutbox({
    events: { 'bench.Ping': sweep ? Consumed : Ping },
    receivers: { noop: receiver('bench.Ping', { deliver: async () => {} }) },
    settings: sweep
      ? { relayPrune: true, relayPruneSeconds: SWEEP_SECONDS }
      : { relayPrune: false },
  });

/** Seed events `from`..`to`, owed now to the noop receiver (one pending row each). */
async function seedOwed(
  sequelize: ReturnType<typeof openSequelize>,
  schema: string,
  from: number,
  to: number,
  deleteWhen: 'succeeded' | null = null,
): Promise<void> {
  const s = `"${schema}"`;
  await sequelize.query(`
    WITH e AS (
      INSERT INTO ${s}.outbox_events (uuid, name, payload, occurred_at, recorded_at, delete_when)
      SELECT gen_random_uuid(), 'bench.Ping', jsonb_build_object('n', g, 'note', ''), now(), now(), ${deleteWhen ? `'${deleteWhen}'` : 'NULL'}
      FROM generate_series(${from}, ${to}) g
      RETURNING id)
    INSERT INTO ${s}.outbox_deliveries (event_id, receiver_key, status, max_attempts, available_at)
    SELECT id, 'noop', 'pending', 5, now() FROM e`);
}

/** p50 / p99 / max of a list of milliseconds. */
function spread(ms: number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  return {
    p50: round(quantile(sorted, 0.5)),
    p99: round(quantile(sorted, 0.99)),
    max: round(sorted[sorted.length - 1] ?? 0),
  };
}

async function runOnce(o: ClaimPruneBenchOptions, mode: 'loop' | 'sweep' | 'off'): Promise<void> {
  const pruner = mode === 'loop';
  const config = configOf(mode === 'sweep');
  const schema = newSchemaName();
  const feeder = openSequelize(2);
  const relayDb = openSequelize(4);
  const prunerDb = openSequelize(2);
  try {
    const outbox = createOutbox(config, {
      sequelize: relayDb,
      schema,
      wakeup: null,
      logger: silentLogger,
    });
    await outbox.migrate();
    if (o.deliveriesStorage)
      await feeder.query(`ALTER TABLE "${schema}".outbox_deliveries SET (${o.deliveriesStorage})`);
    const [[storage]] = (await feeder.query(
      `SELECT coalesce(array_to_string(reloptions, ','), '') AS opts FROM pg_class WHERE oid = '"${schema}".outbox_deliveries'::regclass`,
    )) as [{ opts: string }[], unknown];
    const pruning = createOutbox(config, {
      sequelize: prunerDb,
      schema,
      wakeup: null,
      logger: silentLogger,
    });
    await settle(schema);

    /** Each claim that took rows: when (in events claimed before it) and how long. */
    const claims: { before: number; ms: number }[] = [];
    let claimed = 0;
    outbox.on('relay:claimed', ({ rows, durationMs }) => {
      if (rows === 0) return;
      claims.push({ before: claimed, ms: durationMs });
      claimed += rows;
    });

    note(
      `claim-prune: ${o.events} events through one relay in waves of ${o.wave}, ${mode === 'loop' ? 'a pruner deleting them as they settle' : mode === 'sweep' ? `the relay's idle sweep every ${SWEEP_SECONDS} s` : 'no pruner (the history grows)'} …`,
    );
    const started = performance.now();
    const stop = new AbortController();
    const relay = outbox.runRelay({ signal: stop.signal, pollIntervalMs: 20 });

    let pruned = 0;
    let pruneCalls = 0;
    const autovacuum =
      (o.autovacuumNaptime ?? 0) > 0
        ? await startAutovacuumEmulator(schema, o.autovacuumNaptime ?? 0)
        : undefined;
    const every = o.explainEvery ?? 0;
    const probe = every > 0 ? await openClaimProbe(schema) : undefined;
    let sampledClaims = 0;
    const probeOnce = async (final: boolean) => {
      if (!probe) return;
      const since = claims.slice(sampledClaims).map((c) => c.ms);
      sampledClaims = claims.length;
      emit({
        bench: 'prune',
        figure: 'claim-buffers',
        pruner: mode,
        storage: storage.opts,
        autovacuumNaptime: o.autovacuumNaptime ?? 0,
        claimedSoFar: claimed,
        prunedSoFar: pruned,
        seconds: round((performance.now() - started) / 1000),
        relayClaimMsSinceLast: since.length > 0 ? spread(since) : null,
        ...(await probe.sample(final)),
      });
    };
    const probing = (async () => {
      if (!probe) return;
      let next = 0;
      while (!stop.signal.aborted && claimed < o.events) {
        if (claimed >= next) {
          await probeOnce(false);
          next += every;
        }
        await sleep(100);
      }
    })();

    const prunerDone = (async () => {
      if (!pruner) return;
      while (!stop.signal.aborted) {
        const n = await pruning.pruneEvents({
          olderThan: { seconds: 0 },
          signal: stop.signal,
          onBatch: (b) => {
            pruned += b.events;
          },
        });
        pruneCalls += 1;
        if (n === 0) await sleep(50);
      }
    })();

    let seeded = 0;
    while (seeded < o.events) {
      if (mode === 'sweep') {
        // Bursts: a wave, then a pause once it is claimed, so the relay finds nothing to
        // claim now and then — the only time its idle sweep runs.
        const to = Math.min(o.events, seeded + o.wave);
        await seedOwed(feeder, schema, seeded + 1, to, 'succeeded');
        seeded = to;
        while (claimed < seeded) await sleep(5);
        await sleep(BURST_PAUSE_MS);
      } else if (seeded - claimed < o.wave) {
        const to = Math.min(o.events, seeded + o.wave);
        await seedOwed(feeder, schema, seeded + 1, to);
        seeded = to;
      } else await sleep(5);
    }
    while (claimed < o.events) await sleep(20);
    // Let the last batch be recorded before the relay stops.
    // (the sweep's deletions are read off the history at the end)
    while (mode !== 'sweep' && (await outbox.countDeliveries()).succeeded + pruned < o.events)
      await sleep(20);
    if (mode === 'sweep') await sleep(1000);
    const seconds = (performance.now() - started) / 1000;
    stop.abort();
    await relay;
    await prunerDone;
    const vacuums = (await autovacuum?.stop()) ?? null;
    await probing;
    await probeOnce(true);
    await probe?.close();

    const [[history]] = (await feeder.query(
      `SELECT count(*)::int AS n FROM "${schema}".outbox_events`,
    )) as [{ n: number }[], unknown];
    const tenth = o.events / 10;
    emit({
      bench: 'prune',
      figure: 'claim-while-pruning',
      pruner: mode,
      storage: storage.opts,
      autovacuumNaptime: o.autovacuumNaptime ?? 0,
      vacuums,
      events: o.events,
      wave: o.wave,
      claims: claims.length,
      claimMs: spread(claims.map((c) => c.ms)),
      firstTenthClaimMs: spread(claims.filter((c) => c.before < tenth).map((c) => c.ms)),
      lastTenthClaimMs: spread(claims.filter((c) => c.before >= o.events - tenth).map((c) => c.ms)),
      historyAtEnd: history.n,
      pruned: mode === 'sweep' ? o.events - history.n : pruned,
      pruneCalls,
      seconds: round(seconds),
      eventsPerSecond: Math.round(o.events / seconds),
    });
    await outbox.close();
    await pruning.close();
  } finally {
    await dropSchema(feeder, schema);
    await Promise.all([feeder.close(), relayDb.close(), prunerDb.close()]);
  }
}

export async function benchClaimPrune(o: ClaimPruneBenchOptions): Promise<void> {
  for (const mode of o.pruner) await runOnce(o, mode);
}
