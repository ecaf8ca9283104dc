/**
 * Seed a backlog fast (not timed): `fireMany` in chunks, each chunk one statement in one
 * transaction, then ANALYZE so the planner sees the table as a running system would.
 */
import type { Sequelize } from 'sequelize';
import type { Outbox } from '../src/index.js';

/** Fire `total` bench.Ping events in chunks of `chunk`; returns the seconds it took. */
export async function seedBacklog(outbox: Outbox, total: number, chunk = 1000): Promise<number> {
  const started = performance.now();
  for (let from = 0; from < total; from += chunk) {
    const size = Math.min(chunk, total - from);
    const messages = Array.from({ length: size }, (_, i) => ({
      name: 'bench.Ping',
      payload: { n: from + i, note: 'backlog' },
    }));
    await outbox.fireMany(messages as Parameters<Outbox['fireMany']>[0]);
  }
  return (performance.now() - started) / 1000;
}

/** Refresh the planner's statistics of the outbox tables in `schema`. */
export async function analyze(sequelize: Sequelize, schema: string): Promise<void> {
  await sequelize.query(`ANALYZE "${schema}"."outbox_events"`);
  await sequelize.query(`ANALYZE "${schema}"."outbox_deliveries"`);
}

/**
 * Seed `n` settled events recorded `ageSql` ago, one succeeded delivery row each, set-based
 * (`INSERT … SELECT generate_series`): the history an outbox in service holds within its
 * retention window. Their payloads' `n` is negative, so no figure that matches events by
 * `n` (the latency probes) ever takes one for its own.
 */
export async function seedSettled(
  sequelize: Sequelize,
  schema: string,
  n: number,
  ageSql: string,
): Promise<void> {
  if (n === 0) return;
  const s = `"${schema}"`;
  // In chunks of 200,000, so one statement's WAL and memory stay bounded.
  for (let from = 1; from <= n; from += 200_000) {
    const to = Math.min(n, from + 199_999);
    await sequelize.query(`
      WITH e AS (
        INSERT INTO ${s}.outbox_events (uuid, name, payload, occurred_at, recorded_at)
        SELECT gen_random_uuid(), 'bench.Ping', jsonb_build_object('n', -g, 'note', ''), now() - ${ageSql}, now() - ${ageSql}
        FROM generate_series(${from}, ${to}) g
        RETURNING id)
      INSERT INTO ${s}.outbox_deliveries (event_id, receiver_key, status, attempts, max_attempts, available_at, completed_at, succeeded_at)
      SELECT id, 'noop', 'succeeded', 1, 5, now() - ${ageSql}, now() - ${ageSql}, now() - ${ageSql} FROM e`);
  }
}
