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
