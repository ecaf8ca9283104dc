// Per-event figures of a no-op handler drain (issue 28, item 2): one relay in this process on
// tsc's build (.bench-build/, `npx tsc -p tsconfig.bench.json` first), concurrency 10, batches
// of 500, on a scratch cluster of your own (WAL and commits are cluster-wide; pg_stat_statements
// in shared_preload_libraries and created in the database, for the statements per event):
//   PG=postgres://postgres@127.0.0.1:5437/perf node bench/experiments/handler-weight.mjs [events=20000]
// Prints one JSON line (events/s, this process's CPU per event, WAL bytes, records, full-page
// images, WAL syncs and commits per event), then the statements pg_stat_statements counted
// (calls, calls per event, ms). Beside it, the anchor with the same counters:
//   SNAP=$PWD/bench/experiments/anchor-snap.cjs PGHOST=127.0.0.1 PGPORT=5437 PGDATABASE=perf \
//   PERF_DEPS=$PWD node ../shared/bench-anchors/raw_handler_throughput.js --events 20000 --rt 3
// KEEP=1 keeps the schema (named on stderr with the drain's WAL range, for pg_waldump).
import { createRequire } from 'node:module';

const root = new URL('../../', import.meta.url);
const req = createRequire(new URL('package.json', root));
const { Sequelize } = req('sequelize');
const { z } = await import(req.resolve('zod'));
const ok = await import(new URL('.bench-build/src/index.js', root).href);
const N = Number(process.argv[2] ?? 20000);
const url = process.env.PG ?? 'postgres://postgres@127.0.0.1:5437/perf';
const seq = new Sequelize(url, { logging: false, pool: { max: 12 } });
const schema = 'hstats_' + process.pid;
await seq.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
const Ping = ok.event({ schema: z.object({ n: z.number().int(), note: z.string() }) });
const config = ok.defineOutbox({
  events: { 'bench.Ping': Ping },
  receivers: { noop: ok.receiver('bench.Ping', { handle: async () => {} }) },
});
const outbox = ok.createOutbox(config, {
  sequelize: seq,
  schema,
  wakeup: null,
  logger: ok.silentLogger,
});
await outbox.migrate();
async function seed(n) {
  for (let f = 0; f < n; f += 1000)
    await outbox.fireMany(
      Array.from({ length: Math.min(1000, n - f) }, (_, i) => ({
        name: 'bench.Ping',
        payload: { n: f + i, note: 'backlog' },
      })),
    );
}
async function drain(n) {
  let delivered = 0;
  const stop = new AbortController();
  const on = () => {
    if (++delivered === n) stop.abort();
  };
  outbox.on('relay:delivered', on);
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await outbox.runRelay({
    signal: stop.signal,
    batchSize: 500,
    concurrency: 10,
    pollIntervalMs: 50,
  });
  const c = process.cpuUsage(c0);
  const ms = performance.now() - t0;
  outbox.off?.('relay:delivered', on);
  return { ms, cpuUs: c.user + c.system };
}
// warm-up
await seed(5000);
await drain(5000);
await seed(N);
for (const x of [
  `VACUUM ANALYZE ${schema}.outbox_events`,
  `VACUUM ANALYZE ${schema}.outbox_deliveries`,
  'CHECKPOINT',
])
  await seq.query(x);
const q = async (s) => await seq.query(s, { plain: true });
for (const x of [
  'SELECT pg_stat_statements_reset()',
  "SELECT pg_stat_reset_shared('wal')",
  'SELECT pg_stat_reset()',
])
  await seq.query(x);
const l0 = (await q('SELECT pg_current_wal_insert_lsn()::text AS l')).l;
const d = await drain(N);
const l1 = (await q('SELECT pg_current_wal_insert_lsn()::text AS l')).l;
await new Promise((r) => setTimeout(r, 600));
const wal = await q(
  `SELECT wal_records, wal_fpi, wal_bytes::bigint AS wal_bytes, wal_write, wal_sync FROM pg_stat_wal`,
);
const db = await q(
  `SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()`,
);
console.error('LSN', l0, l1);
const bytes = Number((await q(`SELECT pg_wal_lsn_diff('${l1}','${l0}') AS d`)).d);
const stmts = await seq.query(
  `SELECT calls, rows, round(total_exec_time::numeric,1) AS ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS q FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY calls DESC LIMIT 12`,
  { type: 'SELECT' },
);
console.log(
  JSON.stringify({
    N,
    evPerSec: Math.round((N / d.ms) * 1000),
    clientCpuUsPerEvent: +(d.cpuUs / N).toFixed(1),
    walBytesPerEvent: +(bytes / N).toFixed(0),
    walRecordsPerEvent: +(wal.wal_records / N).toFixed(2),
    fpiPerEvent: +(wal.wal_fpi / N).toFixed(3),
    walSyncPerEvent: +(wal.wal_sync / N).toFixed(3),
    walWritePerEvent: +(wal.wal_write / N).toFixed(3),
    commitsPerEvent: +(db.xact_commit / N).toFixed(3),
  }),
);
for (const s of stmts)
  console.log(
    String(s.calls).padStart(7),
    String((s.calls / N).toFixed(3)).padStart(7),
    String(s.ms).padStart(9),
    s.q,
  );
await outbox.close();
if (!process.env.KEEP) await seq.query(`DROP SCHEMA ${schema} CASCADE`);
else console.error('SCHEMA', schema);
await seq.close();
