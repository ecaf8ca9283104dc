/**
 * Issue 9: autovacuum, emulated, for a server that runs without it. The CI server this bench
 * runs on has `autovacuum = off` (/etc/postgresql/15/main/conf.d/90-ci.conf), so no table is
 * ever vacuumed or analyzed by itself, whatever its storage parameters say; production
 * servers run autovacuum. `--claim-prune-autovacuum S` runs this beside the claim-prune run.
 *
 * Every `naptimeSeconds` (autovacuum_naptime, 60 s by default on a server) it looks at each
 * table of the run's schema as an autovacuum worker does, with the server's settings or the
 * table's own storage parameters where it has them (`autovacuum_vacuum_scale_factor`,
 * `…_threshold`, `…_insert_scale_factor`, `…_insert_threshold`, `autovacuum_analyze_…`,
 * `autovacuum_vacuum_cost_delay`, `…_cost_limit`):
 * - VACUUM when `n_dead_tup` > threshold + scale factor × reltuples, or
 *   `n_ins_since_vacuum` > insert threshold + insert scale factor × reltuples;
 * - ANALYZE when `n_mod_since_analyze` > analyze threshold + analyze scale factor × reltuples;
 * throttled like autovacuum (`vacuum_cost_delay` / `vacuum_cost_limit` set to the table's or
 * the server's autovacuum values for the statement). One table at a time, on one connection,
 * like one autovacuum worker on a small database. What it ran is returned at the end.
 */
import type pg from 'pg';
import { sleep } from '../common.js';
import { connectPg } from '../pg.js';

interface TableState {
  relname: string;
  reltuples: number;
  dead: number;
  insSinceVacuum: number;
  modSinceAnalyze: number;
  opts: Record<string, string>;
}

/** One pass of the emulated autovacuum on one table. */
export interface EmulatedRun {
  readonly table: string;
  readonly what: 'vacuum' | 'analyze' | 'vacuum analyze';
  readonly atSeconds: number;
  readonly ms: number;
  readonly deadBefore: number;
}

export interface AutovacuumEmulator {
  /** Stop (after the pass under way) and say what ran. */
  stop(): Promise<EmulatedRun[]>;
}

export async function startAutovacuumEmulator(
  schema: string,
  naptimeSeconds: number,
): Promise<AutovacuumEmulator> {
  const client: pg.Client = await connectPg('outboxkit-bench-autovacuum-emulator');
  const setting = async (name: string): Promise<string> =>
    (await client.query<{ s: string }>('SELECT current_setting($1) AS s', [name])).rows[0]?.s ?? '';
  const server = {
    vacuumScale: Number(await setting('autovacuum_vacuum_scale_factor')),
    vacuumThreshold: Number(await setting('autovacuum_vacuum_threshold')),
    insertScale: Number(await setting('autovacuum_vacuum_insert_scale_factor')),
    insertThreshold: Number(await setting('autovacuum_vacuum_insert_threshold')),
    analyzeScale: Number(await setting('autovacuum_analyze_scale_factor')),
    analyzeThreshold: Number(await setting('autovacuum_analyze_threshold')),
    costDelay: await setting('autovacuum_vacuum_cost_delay'),
    costLimit: Number(await setting('autovacuum_vacuum_cost_limit')),
    vacuumCostLimit: Number(await setting('vacuum_cost_limit')),
  };
  const runs: EmulatedRun[] = [];
  const started = performance.now();
  let stopping = false;

  const states = async (): Promise<TableState[]> => {
    const { rows } = await client.query<{
      relname: string;
      reltuples: number;
      dead: number;
      ins: number;
      mod: number;
      opts: string[] | null;
    }>(
      `SELECT s.relname, greatest(c.reltuples, 0)::float8 AS reltuples, s.n_dead_tup::float8 AS dead,
              s.n_ins_since_vacuum::float8 AS ins, s.n_mod_since_analyze::float8 AS mod, c.reloptions AS opts
       FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
       WHERE s.schemaname = $1`,
      [schema],
    );
    return rows.map((r) => ({
      relname: r.relname,
      reltuples: r.reltuples,
      dead: r.dead,
      insSinceVacuum: r.ins,
      modSinceAnalyze: r.mod,
      opts: Object.fromEntries(
        (r.opts ?? []).map((o) => {
          const i = o.indexOf('=');
          return [o.slice(0, i), o.slice(i + 1)];
        }),
      ),
    }));
  };

  const pass = async () => {
    for (const s of await states()) {
      const num = (key: string, fallback: number) =>
        s.opts[key] === undefined ? fallback : Number(s.opts[key]);
      const vacuumAt =
        num('autovacuum_vacuum_threshold', server.vacuumThreshold) +
        num('autovacuum_vacuum_scale_factor', server.vacuumScale) * s.reltuples;
      const insertAt =
        num('autovacuum_vacuum_insert_threshold', server.insertThreshold) +
        num('autovacuum_vacuum_insert_scale_factor', server.insertScale) * s.reltuples;
      const analyzeAt =
        num('autovacuum_analyze_threshold', server.analyzeThreshold) +
        num('autovacuum_analyze_scale_factor', server.analyzeScale) * s.reltuples;
      const vacuum = s.dead > vacuumAt || s.insSinceVacuum > insertAt;
      const analyze = s.modSinceAnalyze > analyzeAt;
      if (!vacuum && !analyze) continue;
      const delay = s.opts.autovacuum_vacuum_cost_delay ?? server.costDelay;
      const limit = num(
        'autovacuum_vacuum_cost_limit',
        server.costLimit > 0 ? server.costLimit : server.vacuumCostLimit,
      );
      const t0 = performance.now();
      await client.query(`SET vacuum_cost_delay = '${/^\d+$/.test(delay) ? `${delay}ms` : delay}'`);
      await client.query(`SET vacuum_cost_limit = ${limit}`);
      const what = vacuum && analyze ? 'vacuum analyze' : vacuum ? 'vacuum' : 'analyze';
      await client.query(
        `${vacuum ? `VACUUM${analyze ? ' (ANALYZE)' : ''}` : 'ANALYZE'} "${schema}"."${s.relname}"`,
      );
      runs.push({
        table: s.relname,
        what,
        atSeconds: Math.round((t0 - started) / 100) / 10,
        ms: Math.round(performance.now() - t0),
        deadBefore: s.dead,
      });
    }
  };

  const loop = (async () => {
    while (!stopping) {
      const until = performance.now() + naptimeSeconds * 1000;
      while (!stopping && performance.now() < until) await sleep(100);
      if (stopping) break;
      await pass();
    }
  })();

  return {
    async stop() {
      stopping = true;
      await loop;
      await client.end();
      return runs;
    },
  };
}
