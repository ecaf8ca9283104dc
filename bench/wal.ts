/**
 * WAL per event, broken down by relation and record kind: the same life of an event as
 * `../shared/bench-anchors/wal_per_event.mjs` (a warm-up of 200 events, then N events each
 * fired in its own transaction with one of 1,000 ordering keys, then `deliverPending` until
 * nothing moves), but read back record by record through `pg_walinspect`, so each index's
 * share is visible: its leaf inserts per event (the index entries) and its bytes per event.
 *
 *   npx tsx bench/wal.ts [--events 5000] [--receiver transport|handler]
 *       [--drop deliveries_event,events_name] [--sql "ALTER TABLE …"] [--json] [--keep]
 *
 * `--drop` drops indexes (names after the table prefix) after the migration, `--sql` runs
 * any statements there (`{events}` and `{deliveries}` stand for the tables): what an index
 * costs is the difference to a run without it. WAL is cluster-wide, so run it on a cluster
 * nothing else writes to, with autovacuum off (`ALTER SYSTEM SET autovacuum = off`), or its
 * writes land in the figure: `WAL_PG_URL=postgres://postgres@127.0.0.1:5436/postgres`
 * (a superuser: CHECKPOINT and pg_walinspect). It measures the working tree's src/ (WAL
 * does not depend on how fast the client runs).
 */
import { Sequelize } from 'sequelize';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver } from '../src/index.js';

interface Options {
  events: number;
  receiver: 'transport' | 'handler';
  drop: string[];
  sql: string[];
  json: boolean;
  keep: boolean;
}

function parse(argv: readonly string[]): Options {
  const o: Options = {
    events: 5000,
    receiver: 'transport',
    drop: [],
    sql: [],
    json: false,
    keep: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--events') o.events = Number(next());
    else if (a === '--receiver') {
      const v = next();
      if (v !== 'transport' && v !== 'handler')
        throw new Error(`--receiver is transport or handler (got ${v})`);
      o.receiver = v;
    } else if (a === '--drop') o.drop.push(...next().split(',').filter(Boolean));
    else if (a === '--sql') o.sql.push(next());
    else if (a === '--json') o.json = true;
    else if (a === '--keep') o.keep = true;
    else throw new Error(`unknown option ${a}`);
  }
  return o;
}

interface WalRecord {
  rmgr: string;
  type: string;
  length: number;
  fpi: number;
  rel: string | null;
}

/** One phase's WAL: totals, and per relation and record kind. */
interface PhaseWal {
  bytes: number;
  byKind: Record<string, { n: number; bytes: number }>;
  byRelation: Record<string, { leafInserts: number; records: number; bytes: number }>;
}

const SCHEMA = 'walbench';

async function main(): Promise<void> {
  const o = parse(process.argv.slice(2));
  const url = process.env.WAL_PG_URL ?? 'postgres://postgres@127.0.0.1:5436/postgres';
  const sequelize = new Sequelize(url, { logging: false, pool: { max: 4 } });
  const one = async <T>(sql: string): Promise<T> =>
    (await sequelize.query(sql, { plain: true })) as T;
  const lsn = async () =>
    (await one<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l')).l;
  try {
    await sequelize.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    await sequelize.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE; CREATE SCHEMA ${SCHEMA}`);
    const Ping = event({ schema: z.object({ n: z.number().int(), note: z.string() }) });
    const receivers =
      o.receiver === 'handler'
        ? { noop: receiver('bench.Ping', { handle: async () => {} }) }
        : { noop: receiver('bench.Ping', { deliver: async () => {} }) };
    const config = defineOutbox({ events: { 'bench.Ping': Ping }, receivers });
    const outbox = createOutbox(config, { sequelize, schema: SCHEMA, wakeup: null });
    await outbox.migrate();
    for (const name of o.drop) await sequelize.query(`DROP INDEX ${SCHEMA}."outbox_${name}"`);
    for (const sql of o.sql)
      await sequelize.query(
        sql
          .replaceAll('{events}', `${SCHEMA}.outbox_events`)
          .replaceAll('{deliveries}', `${SCHEMA}.outbox_deliveries`),
      );
    // Warm up as the anchor does: 200 events over 100 keys, delivered.
    for (let i = 0; i < 200; i++)
      await sequelize.transaction((t) =>
        outbox.fire(
          'bench.Ping',
          { n: -i, note: 'warm' },
          { transaction: t, orderingKey: `k${i % 100}` },
        ),
      );
    await outbox.deliverPending({ ignoreBackoff: true }).catch(() => {});
    await sequelize.query('CHECKPOINT');
    const a = await lsn();
    for (let i = 0; i < o.events; i++)
      await sequelize.transaction((t) =>
        outbox.fire(
          'bench.Ping',
          { n: i, note: 'x'.repeat(40) },
          { transaction: t, orderingKey: `order-${i % 1000}` },
        ),
      );
    const b = await lsn();
    for (;;) {
      const r = await outbox.deliverPending({});
      if (Object.values(r).reduce((s, x) => s + x, 0) === 0) break;
    }
    const c = await lsn();
    const counts = await outbox.countDeliveries();
    // Flush so pg_walinspect can read up to c.
    await sequelize.query('SELECT pg_switch_wal()');
    const names = new Map<string, string>(
      (
        (await sequelize.query(
          `SELECT c.relfilenode::text AS f, c.relname AS n FROM pg_class c
           JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1`,
          { bind: [SCHEMA], type: 'SELECT' },
        )) as { f: string; n: string }[]
      ).map((r) => [r.f, r.n.replace(/^outbox_/, '')]),
    );
    const phase = async (from: string, to: string): Promise<PhaseWal> => {
      const rows = (await sequelize.query(
        `SELECT resource_manager AS rmgr, record_type AS type, record_length AS length,
                fpi_length AS fpi, block_ref AS ref
         FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)`,
        { bind: [from, to], type: 'SELECT' },
      )) as { rmgr: string; type: string; length: number; fpi: number; ref: string | null }[];
      const records: WalRecord[] = rows.map((r) => {
        const m = /rel \d+\/\d+\/(\d+)/.exec(r.ref ?? '');
        const rel = m ? (names.get(m[1] as string) ?? `other:${m[1]}`) : null;
        return { rmgr: r.rmgr, type: r.type, length: Number(r.length), fpi: Number(r.fpi), rel };
      });
      const out: PhaseWal = { bytes: 0, byKind: {}, byRelation: {} };
      for (const r of records) {
        out.bytes += r.length;
        const kind = `${r.rmgr}/${r.type}`;
        const k = out.byKind[kind] ?? { n: 0, bytes: 0 };
        out.byKind[kind] = k;
        k.n++;
        k.bytes += r.length;
        const rel = r.rel ?? '(none)';
        const x = out.byRelation[rel] ?? { leafInserts: 0, records: 0, bytes: 0 };
        out.byRelation[rel] = x;
        x.records++;
        x.bytes += r.length;
        if (kind === 'Btree/INSERT_LEAF') x.leafInserts++;
      }
      return out;
    };
    const fire = await phase(a, b);
    const relay = await phase(b, c);
    // The anchor's figure: the distance between the LSNs, which also counts page headers
    // and the records' alignment (1-3 % above the records' own lengths).
    const span = async (from: string, to: string) =>
      Number(
        (
          await one<{ d: string }>(
            `SELECT pg_wal_lsn_diff('${to}'::pg_lsn, '${from}'::pg_lsn)::text AS d`,
          )
        ).d,
      );
    const lsnFire = await span(a, b);
    const lsnRelay = await span(b, c);
    const N = o.events;
    const per = (p: PhaseWal) => ({
      bytesPerEvent: Math.round(p.bytes / N),
      byRelation: Object.fromEntries(
        Object.entries(p.byRelation)
          .sort((x, y) => y[1].bytes - x[1].bytes)
          .map(([rel, v]) => [
            rel,
            {
              entriesPerEvent: +(v.leafInserts / N).toFixed(2),
              bytesPerEvent: Math.round(v.bytes / N),
            },
          ]),
      ),
      byKind: Object.fromEntries(
        Object.entries(p.byKind)
          .sort((x, y) => y[1].bytes - x[1].bytes)
          .map(([kind, v]) => [
            kind,
            { perEvent: +(v.n / N).toFixed(2), bytesPerEvent: Math.round(v.bytes / N) },
          ]),
      ),
    });
    const result = {
      bench: 'wal',
      receiver: o.receiver,
      events: N,
      drop: o.drop,
      sql: o.sql,
      counts,
      totalPerEvent: Math.round((fire.bytes + relay.bytes) / N),
      lsnSpanPerEvent: {
        fire: Math.round(lsnFire / N),
        relay: Math.round(lsnRelay / N),
        total: Math.round((lsnFire + lsnRelay) / N),
      },
      fire: per(fire),
      relay: per(relay),
    };
    if (o.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      const line = (label: string, p: ReturnType<typeof per>) => {
        process.stdout.write(`${label}: ${p.bytesPerEvent} B/event\n`);
        for (const [rel, v] of Object.entries(p.byRelation))
          process.stdout.write(
            `  ${rel.padEnd(28)} ${String(v.bytesPerEvent).padStart(5)} B  ${v.entriesPerEvent} entries\n`,
          );
        for (const [kind, v] of Object.entries(p.byKind))
          process.stdout.write(
            `  ${kind.padEnd(28)} ${String(v.bytesPerEvent).padStart(5)} B  ${v.perEvent} records\n`,
          );
      };
      process.stdout.write(
        `${o.receiver}, ${N} events${o.drop.length ? `, without ${o.drop.join(', ')}` : ''}: ${result.totalPerEvent} B/event in records, ${result.lsnSpanPerEvent.total} B/event of LSN (fire ${result.lsnSpanPerEvent.fire}, relay ${result.lsnSpanPerEvent.relay})\n`,
      );
      line('fire', result.fire);
      line('relay', result.relay);
    }
    await outbox.close();
  } finally {
    if (!o.keep) await sequelize.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`).catch(() => {});
    await sequelize.close();
  }
}

await main();
