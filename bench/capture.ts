/**
 * What change capture costs a write (issue 10), on PostgreSQL. Three figures, each an
 * interleaved comparison (the order alternating per round, so the machine's drift hits
 * both sides alike), each write in a transaction, timed from before BEGIN to after COMMIT:
 *
 * - `capture-bulk`: `bulkCreate` of `--rows` rows of a captured model (payload `after`,
 *   one durable receiver, so one event and one delivery row per row) against the same
 *   `bulkCreate` of an uncaptured model with the same columns; the statements writing to
 *   the events table are counted (bounded: not one per row). Aim: ratio ≤ 2.
 * - `capture-create`: one captured `create` against one uncaptured. Aim: ratio ≤ 1.3.
 * - `capture-elsewhere`: an uncaptured model's `create` on the Sequelize where capture is
 *   installed (on another model) against the same on a Sequelize with none. Aim: ≈ 1.
 *
 *   npx tsx bench/capture.ts [--rows 10000] [--rounds 5] [--iterations 300]
 *
 * Prints one JSON line per figure (with `load1m`: read it above ~1.5 as noise).
 */

import pg from 'pg';
import {
  DataTypes,
  type ModelStatic,
  type Sequelize,
  type Model as SequelizeModel,
} from 'sequelize';
import {
  capture,
  createOutbox,
  defineOutbox,
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

type AnyModel = ModelStatic<SequelizeModel>;
const COLUMNS = {
  customer: { type: DataTypes.STRING, allowNull: false },
  total: { type: DataTypes.DECIMAL(12, 2), allowNull: false },
  status: { type: DataTypes.STRING, allowNull: false, defaultValue: 'new' },
};
function define(sequelize: Sequelize, name: string, table: string, schema: string): AnyModel {
  return sequelize.define(name, COLUMNS, { tableName: table, schema });
}

const median = (xs: number[]) =>
  quantile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

async function main(): Promise<void> {
  const sequelize = openSequelize(2);
  const bare = openSequelize(2);
  const schema = newSchemaName();
  try {
    await sequelize.query(`CREATE SCHEMA "${schema}"`);
    const Captured = define(sequelize, 'Captured', 'captured_rows', schema);
    const Uncaptured = define(sequelize, 'Uncaptured', 'uncaptured_rows', schema);
    const Elsewhere = define(sequelize, 'Elsewhere', 'elsewhere_rows', schema);
    const ElsewhereBare = define(bare, 'Elsewhere', 'elsewhere_rows', schema);
    await Promise.all([Captured.sync(), Uncaptured.sync(), Elsewhere.sync()]);
    const config = defineOutbox({
      events: {},
      capture: [capture(Captured, { app: 'bench', payload: 'after' })],
      receivers: {
        'bench.audit': receiver('bench.captured.inserted', { deliver: async () => {} }),
      },
    });
    const outbox = createOutbox(config, { sequelize, schema, logger: silentLogger });
    await outbox.migrate();
    installCapture(outbox);

    const rows = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ customer: `c${i}`, total: '42.50' }));
    const timed = async (s: Sequelize, work: (t: unknown) => Promise<unknown>) => {
      const t0 = nowMs();
      await s.transaction((transaction) => work(transaction));
      return nowMs() - t0;
    };

    // 1. bulkCreate
    const bulk: Record<'captured' | 'uncaptured', number[]> = { captured: [], uncaptured: [] };
    // Every statement of one captured bulkCreate, the outbox's own included: its store
    // writes events through the driver (prepared statements), so count at pg's Client.
    const statements: string[] = [];
    let counting = false;
    const clientQuery = pg.Client.prototype.query;
    pg.Client.prototype.query = function (this: unknown, ...args: unknown[]) {
      if (counting) {
        const q = args[0] as string | { text?: string };
        statements.push(typeof q === 'string' ? q : String(q?.text ?? ''));
      }
      return (clientQuery as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof clientQuery;
    for (let round_ = 0; round_ <= ROUNDS; round_++) {
      const order =
        round_ % 2 ? (['uncaptured', 'captured'] as const) : (['captured', 'uncaptured'] as const);
      for (const which of order) {
        const model = which === 'captured' ? Captured : Uncaptured;
        counting = round_ === 1 && which === 'captured';
        const ms = await timed(sequelize, (transaction) =>
          model.bulkCreate(rows(ROWS), { transaction } as never),
        );
        counting = false;
        if (round_ > 0) bulk[which].push(ms); // round 0 warms up
      }
      note(
        `capture-bulk round ${round_}: captured ${round(bulk.captured.at(-1) ?? 0)} ms, uncaptured ${round(bulk.uncaptured.at(-1) ?? 0)} ms`,
      );
    }
    const [[{ n }]] = (await sequelize.query(
      `SELECT count(*)::int AS n FROM "${schema}".outbox_events`,
    )) as [[{ n: number }], unknown];
    note(`events written: ${n}`);
    const eventStatements = statements.filter((s) => s.includes('outbox_events')).length;
    emit({
      bench: 'capture-bulk',
      rows: ROWS,
      rounds: ROUNDS,
      capturedMs: round(median(bulk.captured)),
      uncapturedMs: round(median(bulk.uncaptured)),
      ratio: round(median(bulk.captured) / median(bulk.uncaptured)),
      eventStatements,
      statements: statements.length,
      aim: '≤ 2',
    });

    // 2. one create, 3. an uncaptured model's create with capture installed elsewhere
    const one = {
      captured: [] as number[],
      uncaptured: [] as number[],
      elsewhere: [] as number[],
      none: [] as number[],
    };
    const row = { customer: 'c', total: '42.50' };
    for (let i = 0; i < ITERATIONS + 20; i++) {
      const pairs: [keyof typeof one, Sequelize, AnyModel][] = [
        ['captured', sequelize, Captured],
        ['uncaptured', sequelize, Uncaptured],
        ['elsewhere', sequelize, Elsewhere],
        ['none', bare, ElsewhereBare],
      ];
      if (i % 2) pairs.reverse();
      for (const [which, s, model] of pairs) {
        const ms = await timed(s, (transaction) => model.create(row, { transaction } as never));
        if (i >= 20) one[which].push(ms);
      }
    }
    emit({
      bench: 'capture-create',
      iterations: ITERATIONS,
      capturedMs: round(median(one.captured)),
      uncapturedMs: round(median(one.uncaptured)),
      ratio: round(median(one.captured) / median(one.uncaptured)),
      aim: '≤ 1.3',
    });
    emit({
      bench: 'capture-elsewhere',
      iterations: ITERATIONS,
      withCaptureInstalledMs: round(median(one.elsewhere)),
      withoutMs: round(median(one.none)),
      ratio: round(median(one.elsewhere) / median(one.none)),
      aim: '≈ 1 (within noise)',
    });
    await outbox.close();
  } finally {
    await dropSchema(sequelize, schema);
    await Promise.all([sequelize.close(), bare.close()]);
  }
}

await main();
