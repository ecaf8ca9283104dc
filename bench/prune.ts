/**
 * The prune figures (issue 9), through `outbox.pruneEvents()` itself:
 *
 * - `{"bench":"prune","figure":"rate",…}`: rows pruned per second — a backlog of `rows`
 *   settled events (one succeeded delivery row each) recorded past the ordinary window,
 *   deleted by one `pruneEvents()` in batches of `settings.pruneBatchRows` (1,000 rows).
 * - `{"bench":"prune","figure":"nothing-due","history":N,…}`: the time of a prune with
 *   nothing due beside N settled events of history inside the window (and their N delivery
 *   rows), plus 100 live events of each retention (succeeded, settled, a window of its
 *   own) still owed. The median of `repeats` runs. Flat across N is the goal: none of the
 *   four queries reads history (storage/sql/prune.ts).
 *
 * Rows are seeded set-based (`INSERT … SELECT generate_series`), not through `fire()`,
 * then VACUUM (ANALYZE) and CHECKPOINT (`settle`) before the clock starts.
 */
import { createOutbox, silentLogger } from '../src/index.js';
import {
  benchConfig,
  dropSchema,
  emit,
  newSchemaName,
  note,
  openSequelize,
  quantile,
  round,
} from './common.js';
import { settle } from './pg.js';
import { seedSettled } from './seed.js';

export interface PruneBenchOptions {
  /** Settled events to prune for the rate figure. */
  readonly rows: number;
  /** The history sizes of the nothing-due figure. */
  readonly histories: readonly number[];
  /** Runs per nothing-due figure. */
  readonly repeats: number;
}

/** 100 live (owed) events of each retention of its own: what a prune with nothing due reads. */
async function seedLive(sequelize: ReturnType<typeof openSequelize>, schema: string) {
  const s = `"${schema}"`;
  await sequelize.query(`
    WITH e AS (
      INSERT INTO ${s}.outbox_events (uuid, name, payload, occurred_at, recorded_at, retention_seconds, delete_when)
      SELECT gen_random_uuid(), 'bench.Ping', '{"n":0,"note":""}', now(), now(),
             CASE WHEN g % 3 = 0 THEN 86400 END,
             CASE g % 3 WHEN 1 THEN 'succeeded' WHEN 2 THEN 'settled' END
      FROM generate_series(1, 300) g
      RETURNING id)
    INSERT INTO ${s}.outbox_deliveries (event_id, receiver_key, status, max_attempts, available_at)
    SELECT id, 'noop', 'pending', 5, now() FROM e`);
}

export async function benchPrune(o: PruneBenchOptions): Promise<void> {
  const sequelize = openSequelize(2);
  try {
    // Rows pruned per second.
    {
      const schema = newSchemaName();
      try {
        const outbox = createOutbox(benchConfig('noop-delivery'), {
          sequelize,
          schema,
          wakeup: null,
          logger: silentLogger,
        });
        await outbox.migrate();
        note(`prune: seeding ${o.rows} settled events past the window …`);
        await seedSettled(sequelize, schema, o.rows, "interval '30 days'");
        const settleSeconds = await settle(schema);
        let batches = 0;
        const started = performance.now();
        const events = await outbox.pruneEvents({
          onBatch: () => {
            batches += 1;
          },
        });
        const seconds = (performance.now() - started) / 1000;
        if (events !== o.rows) throw new Error(`prune deleted ${events} of ${o.rows} events`);
        emit({
          bench: 'prune',
          figure: 'rate',
          events,
          rows: events * 2,
          batches,
          batchRows: outbox.config.settings.pruneBatchRows,
          seconds: round(seconds),
          eventsPerSecond: Math.round(events / seconds),
          rowsPerSecond: Math.round((events * 2) / seconds),
          settleSeconds: round(settleSeconds),
        });
        await outbox.close();
      } finally {
        await dropSchema(sequelize, schema);
      }
    }
    // A prune with nothing due, against growing history.
    for (const history of o.histories) {
      const schema = newSchemaName();
      try {
        const outbox = createOutbox(benchConfig('noop-delivery'), {
          sequelize,
          schema,
          wakeup: null,
          logger: silentLogger,
        });
        await outbox.migrate();
        note(`prune: nothing due beside ${history} settled events of history …`);
        await seedSettled(sequelize, schema, history, "interval '1 hour'");
        await seedLive(sequelize, schema);
        const settleSeconds = await settle(schema);
        const times: number[] = [];
        for (let i = 0; i < o.repeats + 3; i++) {
          const started = performance.now();
          const events = await outbox.pruneEvents();
          const ms = performance.now() - started;
          if (events !== 0) throw new Error(`a prune with nothing due deleted ${events} events`);
          if (i >= 3) times.push(ms); // three warm-up runs
        }
        times.sort((a, b) => a - b);
        emit({
          bench: 'prune',
          figure: 'nothing-due',
          history,
          liveWithRetention: 300,
          runs: times.length,
          ms: {
            p50: round(quantile(times, 0.5)),
            p90: round(quantile(times, 0.9)),
            max: round(times[times.length - 1] ?? 0),
          },
          settleSeconds: round(settleSeconds),
        });
        await outbox.close();
      } finally {
        await dropSchema(sequelize, schema);
      }
    }
  } finally {
    await sequelize.close();
  }
}
