/**
 * What an event's own columns cost in WAL (issue 31): `fire(…, { columns })` writes them in
 * the event's INSERT (docs/event-columns.md). Measured at 2,000 events, twice alike: none
 * declared 733 B per event, declared but not given 798, given 816 (it was 1,210 while the
 * values were set by an UPDATE after the insert, which wrote the row twice). Fires N events in their own transactions into a scratch schema, three ways
 * — no columns declared, columns declared but not given, columns given (one indexed bigint,
 * one text) — and prints the WAL bytes per event (`pg_current_wal_lsn()` before and after,
 * on a machine where nothing else writes to the cluster: run it alone).
 *
 *   npx tsx bench/experiments/event-columns-wal.ts [events=2000]
 */
import { Sequelize } from 'sequelize';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../src/index.js';

const N = Number(process.argv[2] ?? 2000);
const url = process.env.OUTBOX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function walPerEvent(columns: 'none' | 'declared' | 'given'): Promise<number> {
  const sequelize = new Sequelize(url, { logging: false });
  const schema = `xcol_${columns}_${process.pid}`;
  await sequelize.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await sequelize.query(`CREATE SCHEMA "${schema}"`);
  const config = defineOutbox({
    events: { 'bench.Placed': event({ schema: z.object({ n: z.number() }) }) },
    receivers: { 'bench.r': receiver('bench.Placed', { handle: () => {} }) },
    ...(columns === 'none'
      ? {}
      : {
          eventColumns: {
            order_id: { type: 'bigint', index: true },
            region: { type: 'text' },
          },
        }),
  });
  const outbox = createOutbox(config, { sequelize, schema, wakeup: null, logger: silentLogger });
  await outbox.migrate();
  // Warm up (plans, the first page of each index).
  for (let i = 0; i < 50; i++) await outbox.fire('bench.Placed', { n: i });
  const lsn = async () =>
    (
      (await sequelize.query('SELECT pg_current_wal_lsn()::text AS l', { plain: true })) as {
        l: string;
      }
    ).l;
  const before = await lsn();
  for (let i = 0; i < N; i++) {
    await outbox.fire(
      'bench.Placed',
      { n: i },
      columns === 'given' ? { columns: { order_id: 1_000_000 + i, region: 'eu-west' } } : {},
    );
  }
  const after = await lsn();
  const [{ bytes }] = (await sequelize.query(
    `SELECT pg_wal_lsn_diff('${after}', '${before}')::bigint AS bytes`,
    { type: 'SELECT' },
  )) as unknown as [{ bytes: string }];
  await outbox.close();
  await sequelize.query(`DROP SCHEMA "${schema}" CASCADE`);
  await sequelize.close();
  return Number(bytes) / N;
}

for (const way of ['none', 'declared', 'given'] as const) {
  const perEvent = await walPerEvent(way);
  console.log(
    JSON.stringify({
      bench: 'event-columns-wal',
      columns: way,
      events: N,
      walBytesPerEvent: Math.round(perEvent),
    }),
  );
}
