/**
 * Figure 3: what recording an event adds to a one-row business transaction.
 *
 * Three transactions, all through the same Sequelize instance (same pool, same driver):
 * - `none`: BEGIN; INSERT one order row; COMMIT.
 * - `bare`: the same plus a hand-written INSERT of one event row and one delivery row in
 *   one statement (a CTE), parameters bound, no validation: the floor any outbox pays.
 * - `fire`: the same plus `outbox.fire()` (zod validation, JSON encoding, uuid v7, the
 *   outbox's one-statement INSERT of event and delivery rows), with the default wakeup.
 * - `fanout10`: the same as `fire` for an event whose one receiver is a fan-out of 10
 *   targets (`targets` returning ten ids): one event row and ten delivery rows.
 * They run interleaved in rounds, the order rotating each round, so drift in the machine's
 * load hits all three alike. Each transaction is timed from before BEGIN to after COMMIT.
 * The tables are VACUUMed (ANALYZE) and a CHECKPOINT taken before the warm-up.
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Sequelize, Transaction } from 'sequelize';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../src/index.js';
import { childEntry } from './build.js';
import { dropSchema, emit, newSchemaName, note, openSequelize, quantile, round } from './common.js';
import { settle } from './pg.js';

export interface WriteCostOptions {
  /** Timed transactions per variant. */
  readonly iterations: number;
  /** Rounds they are split into (the order of variants rotates per round). */
  readonly rounds: number;
  /** Untimed transactions per variant first. */
  readonly warmup: number;
}

const OrderPlaced = event({
  schema: z.object({ orderId: z.string(), customer: z.string(), total: z.string() }),
});
const OrderFannedOut = event({ schema: OrderPlaced.schema });
const TEN_TARGETS = Array.from({ length: 10 }, (_, i) => `endpoint-${i}`);
const config = defineOutbox({
  events: { 'bench.OrderPlaced': OrderPlaced, 'bench.OrderFannedOut': OrderFannedOut },
  receivers: {
    'bench.ship': receiver(OrderPlaced, { deliver: async () => {} }),
    'bench.hooks': receiver(OrderFannedOut, {
      targets: () => TEN_TARGETS,
      deliver: async () => {},
    }),
  },
});

type Variant = 'none' | 'bare' | 'fire' | 'fanout10';
const VARIANTS: readonly Variant[] = ['none', 'bare', 'fire', 'fanout10'];

/**
 * Measure and emit the write cost. The transactions run in a child process on tsc's build
 * (bench/write-cost-worker.ts, see build.ts), as the relay's drains do: in this process
 * `fire()` ran through tsx, whose closure wrappers the shipped package does not have. The
 * bare INSERT pays the same Sequelize path either way, so only `fire()`'s own code moved.
 * Without a build (`OUTBOX_BENCH_CHILDREN=tsx`) the child runs the source through tsx.
 */
export async function benchWriteCost(o: WriteCostOptions): Promise<Record<string, unknown>> {
  const script = fileURLToPath(new URL('./write-cost-worker.ts', import.meta.url));
  const entry = childEntry(script);
  const child = fork(entry.path, [JSON.stringify(o)], {
    execArgv: entry.execArgv,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const figure = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let result: Record<string, unknown> | undefined;
    child.on('message', (m: { figure?: Record<string, unknown> }) => {
      result = m.figure;
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      result ? resolve(result) : reject(new Error(`write-cost child exited with ${code}`)),
    );
  });
  emit(figure);
  return figure;
}

/** The write-cost figure, measured in this process (write-cost-worker.ts calls it). */
export async function measureWriteCost(o: WriteCostOptions): Promise<Record<string, unknown>> {
  const sequelize = openSequelize(2);
  const schema = newSchemaName();
  try {
    const outbox = createOutbox(config, { sequelize, schema, logger: silentLogger });
    await outbox.migrate();
    const orders = `"${schema}"."bench_orders"`;
    await sequelize.query(
      `CREATE TABLE ${orders} (id bigserial PRIMARY KEY, customer text NOT NULL, total numeric(12,2) NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
    );
    const events = `"${schema}"."outbox_events"`;
    const deliveries = `"${schema}"."outbox_deliveries"`;
    // The hand-written floor: one event row and its one delivery row, one statement.
    const bareSql = `
      WITH e AS (
        INSERT INTO ${events} (uuid, name, version, payload, headers, occurred_at, recorded_at)
        VALUES ($1::uuid, $2, 1, $3::jsonb, '{}'::jsonb, $4, $4)
        RETURNING id
      )
      INSERT INTO ${deliveries} (event_id, receiver_key, target, max_attempts, available_at)
      SELECT e.id, $5, '', 25, $4 FROM e`;
    const insertOrder = (transaction: Transaction, customer: string) =>
      sequelize.query(`INSERT INTO ${orders} (customer, total) VALUES ($1, $2) RETURNING id`, {
        bind: [customer, '42.50'],
        transaction,
        raw: true,
      });

    await settle(schema);

    let seq = 0;
    const run = async (variant: Variant): Promise<number> => {
      const customer = `c${seq++}`;
      const started = performance.now();
      await sequelize.transaction(async (transaction) => {
        await insertOrder(transaction, customer);
        const payload = { orderId: `o${seq}`, customer, total: '42.50' };
        if (variant === 'bare') {
          const now = new Date();
          await sequelize.query(bareSql, {
            bind: [randomUUID(), 'bench.OrderPlaced', JSON.stringify(payload), now, 'bench.ship'],
            transaction,
            raw: true,
          });
        } else if (variant === 'fire') {
          await outbox.fire('bench.OrderPlaced', payload, { transaction });
        } else if (variant === 'fanout10') {
          await outbox.fire('bench.OrderFannedOut', payload, { transaction });
        }
      });
      return performance.now() - started;
    };

    for (let i = 0; i < o.warmup; i++) for (const v of VARIANTS) await run(v);
    const times: Record<Variant, number[]> = { none: [], bare: [], fire: [], fanout10: [] };
    const perRound = Math.ceil(o.iterations / o.rounds);
    for (let r = 0; r < o.rounds; r++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + r) % VARIANTS.length]);
      for (const v of order) for (let i = 0; i < perRound; i++) times[v].push(await run(v));
    }
    await checkRows(sequelize, schema, o, perRound);
    await outbox.close();

    const stats = Object.fromEntries(
      VARIANTS.map((v) => {
        const sorted = [...times[v]].sort((a, b) => a - b);
        const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
        return [v, { mean, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) }];
      }),
    ) as Record<Variant, { mean: number; p50: number; p99: number }>;
    const { none, bare, fire, fanout10 } = stats;
    const figure = {
      bench: 'write-cost',
      iterations: perRound * o.rounds,
      rounds: o.rounds,
      meanMs: {
        none: round(none.mean),
        bare: round(bare.mean),
        fire: round(fire.mean),
        fanout10: round(fanout10.mean),
      },
      p50Ms: {
        none: round(none.p50),
        bare: round(bare.p50),
        fire: round(fire.p50),
        fanout10: round(fanout10.p50),
      },
      p99Ms: {
        none: round(none.p99),
        bare: round(bare.p99),
        fire: round(fire.p99),
        fanout10: round(fanout10.p99),
      },
      /** Ratios of medians: robust to the outliers other work on the machine causes. */
      ratio: {
        fireVsNone: round(fire.p50 / none.p50),
        bareVsNone: round(bare.p50 / none.p50),
        fireVsBare: round(fire.p50 / bare.p50),
        /** A fan-out of ten targets against one receiver's fire(). */
        fanout10VsFire: round(fanout10.p50 / fire.p50),
      },
      ratioOfMeans: {
        fireVsNone: round(fire.mean / none.mean),
        bareVsNone: round(bare.mean / none.mean),
        fireVsBare: round(fire.mean / bare.mean),
      },
      /** What the outbox write adds to the one-row transaction (medians). */
      addedMs: { bare: round(bare.p50 - none.p50), fire: round(fire.p50 - none.p50) },
      /** fire()'s addition over the hand-written one's: 1.0 = no overhead over the floor. */
      addedCostFireVsBare: round((fire.p50 - none.p50) / (bare.p50 - none.p50)),
    };
    return figure;
  } finally {
    await dropSchema(sequelize, schema);
    await sequelize.close();
    note(`write-cost: schema ${schema} dropped`);
  }
}

/**
 * Every bare and fire transaction wrote exactly one event and one delivery, and every
 * fanout10 one an event and ten.
 */
async function checkRows(
  sequelize: Sequelize,
  schema: string,
  o: WriteCostOptions,
  perRound: number,
): Promise<void> {
  const each = o.warmup + perRound * o.rounds;
  const expected = { events: 3 * each, deliveries: 2 * each + 10 * each };
  const [rows] = (await sequelize.query(
    `SELECT (SELECT count(*) FROM "${schema}"."outbox_events")::int AS events,
            (SELECT count(*) FROM "${schema}"."outbox_deliveries")::int AS deliveries`,
  )) as [{ events: number; deliveries: number }[], unknown];
  const { events, deliveries } = rows[0];
  if (events !== expected.events || deliveries !== expected.deliveries) {
    throw new Error(
      `write-cost wrote ${events} events and ${deliveries} deliveries; expected ${expected.events} and ${expected.deliveries}`,
    );
  }
}
