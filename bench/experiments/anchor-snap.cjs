// SNAP module for ../shared/bench-anchors/raw_handler_throughput.js (bench/experiments/
// handler-weight.mjs says how): WAL records, full-page images, bytes, writes, syncs and
// commits of the database around the anchor's drain, the client's CPU, and its WAL range on
// stderr (for pg_waldump --stats).
module.exports = {
  async pgStats(q) {
    const [w] = await q(
      `SELECT wal_records::float8, wal_fpi::float8, wal_bytes::float8, wal_write::float8, wal_sync::float8 FROM pg_stat_wal`,
    );
    const [d] = await q(
      `SELECT xact_commit::float8 FROM pg_stat_database WHERE datname = current_database()`,
    );
    const [l] = await q(`SELECT pg_current_wal_insert_lsn()::text AS lsn`);
    globalThis.__lsns ??= [];
    globalThis.__lsns.push(l.lsn);
    if (globalThis.__lsns.length === 2) console.error('LSN', globalThis.__lsns.join(' '));
    return { ...w, ...d };
  },
  cpu() {
    const c = process.cpuUsage();
    return { client_us: c.user + c.system };
  },
  diff(a, b) {
    const o = {};
    for (const k of Object.keys(b)) o[k] = b[k] - a[k];
    return o;
  },
};
