/**
 * What change capture costs a write (issue 10), on PostgreSQL. Three figures, each an
 * interleaved comparison (the order alternating per round, so the machine's drift hits
 * both sides alike), each write in a transaction, timed from before BEGIN to after COMMIT:
 *
 * - `capture-bulk`: `bulkCreate` of `--rows` rows of a captured model (payload `after`,
 *   one durable receiver, so one event and one delivery row per row) against the same
 *   `bulkCreate` of an uncaptured model with the same columns. Aim: ratio ≤ 2. Also timed,
 *   interleaved with them: the hand-written equivalent (`handWrittenMs`: the uncaptured
 *   `bulkCreate`, then `fireMany` of the same envelopes in its transaction) — the floor
 *   capture cannot go under, since the events' own statement is most of the cost.
 *   Every statement of one captured `bulkCreate` is counted (bounded: not one per row)
 *   and timed: the row INSERT, the events' INSERT, and what is left (capture's and
 *   `fire()`'s JavaScript, BEGIN/COMMIT).
 * - `capture-update`: `Model.update` of `--rows` rows, captured (payload `after`) against
 *   uncaptured (no aim of its own: it shows what RETURNING spares — no read of the rows).
 * - `capture-create`: one captured `create` against one uncaptured. Aim: ratio ≤ 1.3.
 *   Also the hand-written `create` + `fire()` in the same transaction.
 * - `capture-elsewhere`: an uncaptured model's `create` on the Sequelize where capture is
 *   installed (on another model) against the same on a Sequelize with none. Aim: ≈ 1.
 *
 *   npx tsx bench/capture.ts [--rows 10000] [--rounds 5] [--iterations 300] [--explain]
 *     [--dialect postgres|sqlite] [--only bulk,update,create]
 *
 * `--dialect sqlite` runs the same figures on a SQLite file in a temporary directory (no
 * schema; statements counted from Sequelize's log, where the store writes its own too).
 * `--only` runs some of the parts (`create` is the create and elsewhere figures).
 *
 * `--explain` runs the events' statement of the counted `bulkCreate` again under
 * `EXPLAIN (ANALYZE, BUFFERS)` (in a transaction rolled back, the outbox tables emptied
 * in it first) and prints where the server spent its time: the events' INSERT, the
 * delivery rows' INSERT (their indexes and foreign key), the whole.
 *
 * Prints one JSON line per figure (with `load1m`: read it above ~1.5 as noise).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import {
  DataTypes,
  type ModelStatic,
  Op,
  Sequelize,
  type Model as SequelizeModel,
} from 'sequelize';
import { z } from 'zod';
import {
  capture,
  createOutbox,
  defineOutbox,
  event,
  installCapture,
  receiver,
  silentLogger,
} from '../src/index.js';
import {
  dropSchema,
  emit,
  newSchemaName,
  note,
  nowMs,
  openSequelize,
  PG_URL,
  quantile,
  round,
} from './common.js';

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}
const ROWS = arg('rows', 10_000);
const ROUNDS = arg('rounds', 5);
const ITERATIONS = arg('iterations', 300);
/** `--explain`: also EXPLAIN ANALYZE the events' statement of the counted bulkCreate. */
const EXPLAIN = process.argv.includes('--explain');
function textArg(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? String(process.argv[at + 1]) : fallback;
}
const DIALECT = textArg('dialect', 'postgres');
if (DIALECT !== 'postgres' && DIALECT !== 'sqlite') throw new Error(`--dialect ${DIALECT}?`);
const SQLITE = DIALECT === 'sqlite';
const ONLY = new Set(textArg('only', 'bulk,update,create').split(','));

type AnyModel = ModelStatic<SequelizeModel>;
const COLUMNS = {
  customer: { type: DataTypes.STRING, allowNull: false },
  total: { type: DataTypes.DECIMAL(12, 2), allowNull: false },
  status: { type: DataTypes.STRING, allowNull: false, defaultValue: 'new' },
};
function define(
  sequelize: Sequelize,
  name: string,
  table: string,
  schema: string | undefined,
): AnyModel {
  return sequelize.define(name, COLUMNS, { tableName: table, ...(schema ? { schema } : {}) });
}

/** The two Sequelize instances of a run (the second without capture) and their cleanup. */
function openBoth(logging: (sql: string) => void): {
  sequelize: Sequelize;
  bare: Sequelize;
  schema: string | undefined;
  cleanup: () => Promise<void>;
} {
  if (!SQLITE) {
    const sequelize = openSequelize(2, logging);
    const bare = openSequelize(2);
    const schema = newSchemaName();
    return {
      sequelize,
      bare,
      schema,
      cleanup: async () => {
        await dropSchema(sequelize, schema);
        await Promise.all([sequelize.close(), bare.close()]);
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'outboxkit-bench-'));
  const storage = join(dir, 'bench.sqlite');
  const sequelize = new Sequelize({ dialect: 'sqlite', storage, logging });
  const bare = new Sequelize({ dialect: 'sqlite', storage, logging: false });
  return {
    sequelize,
    bare,
    schema: undefined,
    cleanup: async () => {
      await Promise.all([sequelize.close(), bare.close()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const median = (xs: number[]) =>
  quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

async function main(): Promise<void> {
  // On SQLite the statements are counted from Sequelize's log (the store writes its own
  // there too); on PostgreSQL at pg's Client, below.
  const sqliteLog: { text: string; at: number; ms?: number }[] = [];
  let logging = false;
  const { sequelize, bare, schema, cleanup } = openBoth((sql) => {
    if (logging) sqliteLog.push({ text: sql.replace(/^Executing \([^)]*\): /, ''), at: nowMs() });
  });
  try {
    if (schema) await sequelize.query(`CREATE SCHEMA "${schema}"`);
    const Captured = define(sequelize, 'Captured', 'captured_rows', schema);
    const Uncaptured = define(sequelize, 'Uncaptured', 'uncaptured_rows', schema);
    const Elsewhere = define(sequelize, 'Elsewhere', 'elsewhere_rows', schema);
    const ElsewhereBare = define(bare, 'Elsewhere', 'elsewhere_rows', schema);
    await Promise.all([Captured.sync(), Uncaptured.sync(), Elsewhere.sync()]);
    // The hand-written equivalent: an event of the same envelope, fired by the caller.
    const envelope = z.object({
      model: z.string(),
      operation: z.string(),
      pk: z.number(),
      changed: z.null(),
      after: z.record(z.string(), z.unknown()),
      occurred_at: z.string(),
    });
    const config = defineOutbox({
      events: { 'bench.uncaptured.inserted': event({ schema: envelope }) },
      capture: [capture(Captured, { app: 'bench', payload: 'after' })],
      receivers: {
        'bench.audit': receiver('bench.captured.inserted', { deliver: async () => {} }),
        'bench.audit-by-hand': receiver('bench.uncaptured.inserted', { deliver: async () => {} }),
      },
    });
    const outbox = createOutbox(config, {
      sequelize,
      ...(schema ? { schema } : {}),
      logger: silentLogger,
    });
    await outbox.migrate();
    installCapture(outbox);

    const rows = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ customer: `c${i}`, total: '42.50' }));
    // Each write's wall time, and the client process's CPU time over it (user + system,
    // every thread: SQLite's engine included, PostgreSQL's server not), which the
    // machine's other load moves far less than the wall time.
    let lastCpuMs = 0;
    const timed = async (s: Sequelize, work: (t: unknown) => Promise<unknown>) => {
      const c0 = process.cpuUsage();
      const t0 = nowMs();
      await s.transaction((transaction) => work(transaction));
      const ms = nowMs() - t0;
      const cpu = process.cpuUsage(c0);
      lastCpuMs = (cpu.user + cpu.system) / 1000;
      return ms;
    };
    const cpu: Record<string, number[]> = {};
    const keepCpu = (key: string) => {
      cpu[key] ??= [];
      cpu[key].push(lastCpuMs);
    };
    const cpuRatio = (a: string, b: string) =>
      round(median(cpu[a] ?? [Number.NaN]) / median(cpu[b] ?? [Number.NaN]));
    /** The events a hand-written outbox fires for inserted rows: capture's envelope. */
    const byHand = (made: SequelizeModel[]) =>
      made.map((r) => {
        const v = r.get({ plain: true }) as Record<string, unknown>;
        const at = new Date().toISOString();
        const after = {
          ...v,
          createdAt: (v.createdAt as Date).toISOString(),
          updatedAt: (v.updatedAt as Date).toISOString(),
        };
        return {
          name: 'bench.uncaptured.inserted' as const,
          payload: {
            model: 'bench.Uncaptured',
            operation: 'inserted',
            pk: v.id as number,
            changed: null,
            after,
            occurred_at: at,
          },
          orderingKey: `bench.Uncaptured:${v.id}`,
        };
      });
    const handWritten = async (transaction: unknown, made: SequelizeModel[]) => {
      await outbox.fireMany(byHand(made) as never, { transaction } as never);
    };

    // Every statement of one counted write, the outbox's own included: its store writes
    // events through the driver (prepared statements), so on PostgreSQL count at pg's
    // Client, and time each from its start to its result.
    const pgLog: { text: string; at: number; ms?: number; values?: unknown[] }[] = [];
    let counting = false;
    const clientQuery = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: unknown, ...args: unknown[]) {
      if (counting) {
        const q = args[0] as
          | string
          | { text?: string; values?: unknown[]; callback?: (...a: unknown[]) => void };
        const st: { text: string; at: number; ms?: number; values?: unknown[] } = {
          text: typeof q === 'string' ? q : String(q?.text ?? ''),
          at: nowMs(),
          ...(typeof q === 'object' && q?.values ? { values: q.values } : {}),
        };
        pgLog.push(st);
        // Its own time, start to result: Sequelize passes a callback, the store a Query
        // object carrying one.
        const done = () => {
          st.ms = nowMs() - st.at;
        };
        const last = args.length - 1;
        if (typeof args[last] === 'function') {
          const cb = args[last] as (...a: unknown[]) => void;
          args[last] = (...a: unknown[]) => {
            done();
            cb(...a);
          };
        } else if (typeof q === 'object' && typeof q?.callback === 'function') {
          const cb = q.callback;
          q.callback = (...a: unknown[]) => {
            done();
            cb(...a);
          };
        }
      }
      return (clientQuery as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof clientQuery;
    if (ONLY.has('bulk')) {
      // 1. bulkCreate
      const bulk: Record<'captured' | 'uncaptured' | 'handWritten', number[]> = {
        captured: [],
        uncaptured: [],
        handWritten: [],
      };
      // Every statement of one captured bulkCreate, the outbox's own included: its store
      // writes events through the driver (prepared statements), so count at pg's Client,
      // and time each from its start to the next one's (node-postgres runs one at a time
      // per connection).
      const statements = SQLITE ? sqliteLog : pgLog;
      let countedMs = 0;
      const kinds = ['captured', 'uncaptured', 'handWritten'] as const;
      for (let round_ = 0; round_ <= ROUNDS; round_++) {
        const order = round_ % 2 ? [...kinds].reverse() : [...kinds];
        for (const which of order) {
          counting = round_ === 1 && which === 'captured';
          logging = counting;
          const t0 = nowMs();
          const ms = await timed(sequelize, async (transaction) => {
            if (which === 'captured')
              return Captured.bulkCreate(rows(ROWS), { transaction } as never);
            const made = await Uncaptured.bulkCreate(rows(ROWS), { transaction } as never);
            if (which === 'handWritten') await handWritten(transaction, made);
            return made;
          });
          if (counting) countedMs = nowMs() - t0;
          counting = false;
          logging = false;
          if (round_ > 0) {
            bulk[which].push(ms); // round 0 warms up
            keepCpu(`bulk.${which}`);
          }
        }
        note(
          `capture-bulk round ${round_}: captured ${round(bulk.captured.at(-1) ?? 0)} ms, uncaptured ${round(bulk.uncaptured.at(-1) ?? 0)} ms, hand-written ${round(bulk.handWritten.at(-1) ?? 0)} ms`,
        );
      }
      const [[{ n }]] = (await sequelize.query(
        `SELECT CAST(count(*) AS INTEGER) AS n FROM ${schema ? `"${schema}".` : ''}outbox_events`,
      )) as [[{ n: number }], unknown];
      note(`events written: ${n}`);
      // Each statement's own time (start to result), where the driver gave a promise for it.
      const rowInsert = statements.find((st) => /^\s*INSERT INTO .*captured_rows/.test(st.text));
      const eventInsert = statements.find((st) => st.text.includes('outbox_events'));
      note(
        `one captured bulkCreate of ${ROWS} rows: ${statements.length} statements (${statements.map((st) => st.text.trim().split(/\s+/).slice(0, 2).join(' ')).join(' | ')})`,
      );
      emit({
        bench: 'capture-bulk',
        dialect: DIALECT,
        rows: ROWS,
        rounds: ROUNDS,
        capturedMs: round(median(bulk.captured)),
        uncapturedMs: round(median(bulk.uncaptured)),
        handWrittenMs: round(median(bulk.handWritten)),
        ratio: round(median(bulk.captured) / median(bulk.uncaptured)),
        cpuRatio: cpuRatio('bulk.captured', 'bulk.uncaptured'),
        capturedCpuMs: round(median(cpu['bulk.captured'] ?? [])),
        uncapturedCpuMs: round(median(cpu['bulk.uncaptured'] ?? [])),
        vsHandWritten: round(median(bulk.captured) / median(bulk.handWritten)),
        statements: statements.length,
        eventStatements: statements.filter((st) => st.text.includes('outbox_events')).length,
        // One counted run, split (ms): the row INSERT's own time, the events' INSERT's, the
        // whole (the rest: Sequelize's and capture's and fire()'s JavaScript, BEGIN/COMMIT).
        spanRowInsertMs: rowInsert?.ms === undefined ? null : round(rowInsert.ms),
        spanEventInsertMs: eventInsert?.ms === undefined ? null : round(eventInsert.ms),
        spanTotalMs: round(countedMs),
        aim: '≤ 2',
      });

      if (EXPLAIN && !SQLITE && eventInsert && 'values' in eventInsert && eventInsert.values) {
        const client = new pg.Client({ connectionString: PG_URL });
        await client.connect();
        try {
          await client.query('BEGIN');
          await client.query(
            `TRUNCATE "${schema}".outbox_deliveries, "${schema}".outbox_events CASCADE`,
          );
          const plan = await client.query({
            text: `EXPLAIN (ANALYZE, BUFFERS) ${eventInsert.text}`,
            values: eventInsert.values as unknown[],
          });
          const lines = plan.rows.map((r: Record<string, string>) => r['QUERY PLAN'] ?? '');
          const actual = (what: RegExp) => {
            const line = lines.find((l) => what.test(l)) ?? '';
            return Number(/actual time=[\d.]+\.\.([\d.]+)/.exec(line)?.[1] ?? Number.NaN);
          };
          emit({
            bench: 'capture-bulk-explain',
            rows: ROWS,
            eventsInsertMs: actual(/Insert on outbox_events/),
            deliveriesInsertMs: actual(/Insert on outbox_deliveries/),
            executionMs: Number(/Execution Time: ([\d.]+)/.exec(lines.join('\n'))?.[1]),
          });
        } finally {
          await client.query('ROLLBACK').catch(() => undefined);
          await client.end();
        }
      }
    }

    if (ONLY.has('update')) {
      // 1b. Model.update of --rows rows: on PostgreSQL its RETURNING gives the rows after
      // (payload `after`: no read before or after the statement).
      const upd: Record<'captured' | 'uncaptured', number[]> = { captured: [], uncaptured: [] };
      for (let round_ = 0; round_ <= ROUNDS; round_++) {
        const order =
          round_ % 2
            ? (['uncaptured', 'captured'] as const)
            : (['captured', 'uncaptured'] as const);
        for (const which of order) {
          const model = which === 'captured' ? Captured : Uncaptured;
          const ms = await timed(sequelize, (transaction) =>
            model.update({ status: `paid${round_}` }, {
              where: { id: { [Op.lte]: ROWS } },
              transaction,
            } as never),
          );
          if (round_ > 0) upd[which].push(ms);
        }
      }
      emit({
        bench: 'capture-update',
        dialect: DIALECT,
        rows: ROWS,
        rounds: ROUNDS,
        capturedMs: round(median(upd.captured)),
        uncapturedMs: round(median(upd.uncaptured)),
        ratio: round(median(upd.captured) / median(upd.uncaptured)),
      });
    }

    if (ONLY.has('create')) {
      // 2. one create, 3. an uncaptured model's create with capture installed elsewhere
      const one = {
        captured: [] as number[],
        uncaptured: [] as number[],
        handWritten: [] as number[],
        elsewhere: [] as number[],
        none: [] as number[],
      };
      const row = { customer: 'c', total: '42.50' };
      const creates: [keyof typeof one, Sequelize, (t: unknown) => Promise<unknown>][] = [
        ['captured', sequelize, (transaction) => Captured.create(row, { transaction } as never)],
        [
          'uncaptured',
          sequelize,
          (transaction) => Uncaptured.create(row, { transaction } as never),
        ],
        [
          'handWritten',
          sequelize,
          async (transaction) =>
            handWritten(transaction, [await Uncaptured.create(row, { transaction } as never)]),
        ],
        ['elsewhere', sequelize, (transaction) => Elsewhere.create(row, { transaction } as never)],
        ['none', bare, (transaction) => ElsewhereBare.create(row, { transaction } as never)],
      ];
      // The statements of one captured and one uncaptured create (the 20th, warmed up).
      const perCreate: Partial<Record<keyof typeof one, string[]>> = {};
      for (let i = 0; i < ITERATIONS + 20; i++) {
        const pairs = i % 2 ? [...creates].reverse() : creates;
        for (const [which, s, work] of pairs) {
          const count = i === 20 && (which === 'captured' || which === 'uncaptured');
          const log = SQLITE ? sqliteLog : pgLog;
          const from = log.length;
          counting = count;
          logging = count;
          const ms = await timed(s, work);
          counting = false;
          logging = false;
          if (count)
            perCreate[which] = log.slice(from).map((st) => st.text.trim().split(/\s+/)[0]!);
          if (i >= 20) {
            one[which].push(ms);
            keepCpu(`one.${which}`);
          }
        }
      }
      note(
        `one captured create: ${perCreate.captured?.length} statements (${perCreate.captured?.join(' | ')}); uncaptured: ${perCreate.uncaptured?.length} (${perCreate.uncaptured?.join(' | ')})`,
      );
      emit({
        bench: 'capture-create',
        dialect: DIALECT,
        iterations: ITERATIONS,
        capturedStatements: perCreate.captured?.length ?? null,
        uncapturedStatements: perCreate.uncaptured?.length ?? null,
        capturedMs: round(median(one.captured)),
        uncapturedMs: round(median(one.uncaptured)),
        handWrittenMs: round(median(one.handWritten)),
        ratio: round(median(one.captured) / median(one.uncaptured)),
        cpuRatio: cpuRatio('one.captured', 'one.uncaptured'),
        capturedCpuMs: round(median(cpu['one.captured'] ?? [])),
        uncapturedCpuMs: round(median(cpu['one.uncaptured'] ?? [])),
        vsHandWritten: round(median(one.captured) / median(one.handWritten)),
        aim: '≤ 1.3',
      });
      emit({
        bench: 'capture-elsewhere',
        dialect: DIALECT,
        iterations: ITERATIONS,
        withCaptureInstalledMs: round(median(one.elsewhere)),
        withoutMs: round(median(one.none)),
        ratio: round(median(one.elsewhere) / median(one.none)),
        cpuRatio: cpuRatio('one.elsewhere', 'one.none'),
        aim: '≈ 1 (within noise)',
      });
    }

    pg.Client.prototype.query = clientQuery;
    await outbox.close();
  } finally {
    await cleanup();
  }
}

await main();
