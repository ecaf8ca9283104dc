/**
 * `npm run bench:compare -- --dialect mariadb`: outboxkit on MariaDB beside the plain loops of
 * ../shared/bench-anchors/ ported to MariaDB's SQL, interleaved in rounds, and the ratios.
 *
 *   npm run bench:compare -- --dialect mariadb [--rounds 2] [--events 20000] [--tx 1000]
 *
 * Figures (one JSON line each on stdout, the table of medians and ratios on stderr):
 * - drain, transport: a backlog of N events, one relay with a no-op `deliver`, batch 500;
 *   beside `bare-transport`, the anchors' raw_relay_throughput loop (claim a batch with
 *   `SELECT … FOR UPDATE SKIP LOCKED` + UPDATE in one transaction, read the events, mark them
 *   done by id) on a mariadb driver connection;
 * - drain, handler: the same backlog, a no-op handler, concurrency 10; beside `bare-handler`,
 *   raw_handler_throughput's loop (claim, then each row its own transaction: BEGIN, the
 *   acknowledgement, COMMIT, 10 connections);
 * - write: what recording an event adds to a one-row business transaction (write_overhead):
 *   `base` (INSERT the order), `bare-outbox` (+ INSERT the event, + its delivery row) and
 *   `outboxkit` (+ `fire()` in the transaction), one connection, sequential.
 *
 * Unlike the PostgreSQL bench (bench/run.ts: child processes on tsc's build), everything runs
 * in this one process through tsx, each figure in a fresh database `bench_<hex>` dropped
 * afterwards: compare the ratios of one run, never its absolute times with another's.
 * Needs `OUTBOX_BENCH_MARIADB_URL` (default `mariadb://root@127.0.0.1:3306/test`).
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { type Connection, createConnection } from 'mariadb';
import { QueryTypes, Sequelize } from 'sequelize';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../src/index.js';

const BASE_URL = process.env.OUTBOX_BENCH_MARIADB_URL ?? 'mariadb://root@127.0.0.1:3306/test';
const now = () => Number(process.hrtime.bigint()) / 1e6;
const payloadFor = (i: number) => ({
  orderId: i,
  customerId: i % 1000,
  amount: ((i % 10000) / 100).toFixed(2),
  currency: 'EUR',
  note: 'x'.repeat(120),
});

interface Figure {
  readonly figure: string;
  readonly system: string;
  readonly value: number;
  readonly unit: string;
}

/** A fresh database of its own for one figure, dropped afterwards. */
async function withDatabase<T>(work: (url: string, name: string) => Promise<T>): Promise<T> {
  const name = `bench_${randomBytes(5).toString('hex')}`;
  const admin = new Sequelize(BASE_URL, { logging: false });
  await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`, {
    type: QueryTypes.BULKUPDATE,
  });
  const url = new URL(BASE_URL);
  url.pathname = `/${name}`;
  try {
    return await work(url.toString(), name);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS \`${name}\``, { type: QueryTypes.BULKUPDATE });
    await admin.close();
  }
}

const connect = (url: string): Promise<Connection> => {
  const u = new URL(url);
  return createConnection({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: u.pathname.slice(1),
    bigIntAsNumber: true,
    insertIdAsNumber: true,
  });
};

// The anchors' smallest outbox (lib.js OUTBOX_DDL), in MariaDB's SQL.
const BARE_DDL = [
  `CREATE TABLE bare_events (id BIGINT AUTO_INCREMENT PRIMARY KEY, topic VARCHAR(255) NOT NULL,
     aggregate_id VARCHAR(255) NOT NULL, payload JSON NOT NULL,
     created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB`,
  `CREATE TABLE bare_deliveries (id BIGINT AUTO_INCREMENT PRIMARY KEY, event_id BIGINT NOT NULL,
     status VARCHAR(16) NOT NULL DEFAULT 'pending', claimed_by VARCHAR(64), claimed_at DATETIME(6),
     delivered_at DATETIME(6), KEY deliveries_pending (status, id)) ENGINE=InnoDB`,
  `CREATE TABLE orders (id BIGINT AUTO_INCREMENT PRIMARY KEY, customer_id INT NOT NULL,
     amount DECIMAL(10,2) NOT NULL, created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB`,
];

async function seedBare(c: Connection, events: number): Promise<void> {
  for (const ddl of BARE_DDL) await c.query(ddl);
  for (let from = 1; from <= events; from += 10_000) {
    const to = Math.min(events, from + 9_999);
    await c.query(
      `INSERT INTO bare_events (topic, aggregate_id, payload)
       SELECT 'order.created', CONCAT('order-', seq),
              JSON_OBJECT('orderId', seq, 'customerId', seq % 1000, 'amount', CAST((seq % 10000) / 100.0 AS CHAR),
                          'currency', 'EUR', 'note', REPEAT('x', 120))
       FROM seq_${from}_to_${to}`,
    );
  }
  await c.query('INSERT INTO bare_deliveries (event_id) SELECT id FROM bare_events ORDER BY id');
  await c.query('ANALYZE TABLE bare_events, bare_deliveries');
}

/** The anchors' claim: a batch locked SKIP LOCKED and marked in flight, with its events. */
async function bareClaim(c: Connection, worker: string, batch: number) {
  await c.beginTransaction();
  const ids = (await c.query(
    `SELECT id FROM bare_deliveries WHERE status = 'pending' ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED`,
    [batch],
  )) as { id: number }[];
  if (ids.length === 0) {
    await c.commit();
    return [];
  }
  const list = ids.map((r) => r.id);
  await c.query(
    `UPDATE bare_deliveries SET status = 'in_flight', claimed_by = ?, claimed_at = NOW(6) WHERE id IN (?)`,
    [worker, list],
  );
  await c.commit();
  return (await c.query(
    `SELECT d.id AS delivery_id, e.topic, e.payload FROM bare_deliveries d JOIN bare_events e ON e.id = d.event_id WHERE d.id IN (?)`,
    [list],
  )) as { delivery_id: number; topic: string }[];
}

async function bareTransport(events: number): Promise<number> {
  return withDatabase(async (url) => {
    const c = await connect(url);
    try {
      await seedBare(c, events);
      const t0 = now();
      let done = 0;
      for (;;) {
        const rows = await bareClaim(c, 'w0', 500);
        if (rows.length === 0) break;
        await c.query(
          `UPDATE bare_deliveries SET status = 'done', delivered_at = NOW(6) WHERE id IN (?)`,
          [rows.map((r) => r.delivery_id)],
        );
        done += rows.length;
      }
      if (done !== events) throw new Error(`bare transport delivered ${done} of ${events}`);
      return events / ((now() - t0) / 1000);
    } finally {
      await c.end();
    }
  });
}

async function bareHandler(events: number, concurrency = 10): Promise<number> {
  return withDatabase(async (url) => {
    const c = await connect(url);
    const lanes = await Promise.all(Array.from({ length: concurrency }, () => connect(url)));
    try {
      await seedBare(c, events);
      const t0 = now();
      let done = 0;
      for (;;) {
        const rows = await bareClaim(c, 'w0', 500);
        if (rows.length === 0) break;
        let next = 0;
        await Promise.all(
          lanes.map(async (lane) => {
            while (next < rows.length) {
              const row = rows[next++]!;
              await lane.beginTransaction();
              const res = (await lane.query(
                `UPDATE bare_deliveries SET status = 'done', delivered_at = NOW(6) WHERE id = ? AND status = 'in_flight' AND claimed_by = ?`,
                [row.delivery_id, 'w0'],
              )) as { affectedRows: number };
              await lane.commit();
              if (res.affectedRows === 1) done++;
            }
          }),
        );
      }
      if (done !== events) throw new Error(`bare handler acknowledged ${done} of ${events}`);
      return events / ((now() - t0) / 1000);
    } finally {
      await Promise.all([c.end(), ...lanes.map((l) => l.end())]);
    }
  });
}

const Placed = event({
  schema: z.object({
    orderId: z.number(),
    customerId: z.number(),
    amount: z.string(),
    currency: z.string(),
    note: z.string(),
  }),
});

/** outboxkit's drain of `events` fired beforehand, with a no-op transport or handler. */
async function outboxkitDrain(events: number, kind: 'transport' | 'handler'): Promise<number> {
  return withDatabase(async (url) => {
    const sequelize = new Sequelize(url, { logging: false, pool: { max: 12 } });
    const config = defineOutbox({
      events: { 'order.created': Placed },
      receivers: {
        'bench.noop':
          kind === 'transport'
            ? receiver(Placed, { deliver: async () => {} })
            : receiver(Placed, { handle: async () => {} }),
      },
    });
    const outbox = createOutbox(config, { sequelize, wakeup: null, logger: silentLogger });
    try {
      await outbox.migrate();
      for (let i = 0; i < events; i += 1000)
        await outbox.fireMany(
          Array.from({ length: Math.min(1000, events - i) }, (_, k) => ({
            name: 'order.created' as const,
            payload: payloadFor(i + k),
          })),
        );
      await sequelize.query('ANALYZE TABLE outbox_events, outbox_deliveries', {
        type: QueryTypes.SELECT,
      });
      const t0 = now();
      const report = await outbox.runRelay({
        untilIdle: true,
        batchSize: 500,
        concurrency: kind === 'handler' ? 10 : 1,
      });
      const elapsed = now() - t0;
      if (report.succeeded !== events)
        throw new Error(`outboxkit delivered ${report.succeeded} of ${events}`);
      return events / (elapsed / 1000);
    } finally {
      await outbox.close();
      await sequelize.close();
    }
  });
}

/** Transactions per second of one write shape, sequential on one connection. */
async function writeCost(tx: number, shape: 'base' | 'bare-outbox' | 'outboxkit'): Promise<number> {
  return withDatabase(async (url) => {
    const sequelize = new Sequelize(url, { logging: false, pool: { max: 2 } });
    const outbox = createOutbox(
      defineOutbox({
        events: { 'order.created': Placed },
        receivers: { 'bench.noop': receiver(Placed, { deliver: async () => {} }) },
      }),
      { sequelize, wakeup: null, logger: silentLogger },
    );
    try {
      await outbox.migrate();
      for (const ddl of BARE_DDL) await sequelize.query(ddl, { type: QueryTypes.BULKUPDATE });
      const one = async (i: number) =>
        sequelize.transaction(async (transaction) => {
          const [id] = (await sequelize.query(
            'INSERT INTO orders (customer_id, amount) VALUES (?, ?)',
            { replacements: [i % 1000, '12.34'], type: QueryTypes.INSERT, transaction },
          )) as unknown as [number];
          if (shape === 'bare-outbox') {
            const [eventId] = (await sequelize.query(
              'INSERT INTO bare_events (topic, aggregate_id, payload) VALUES (?, ?, ?)',
              {
                replacements: ['order.created', `order-${id}`, JSON.stringify(payloadFor(i))],
                type: QueryTypes.INSERT,
                transaction,
              },
            )) as unknown as [number];
            await sequelize.query('INSERT INTO bare_deliveries (event_id) VALUES (?)', {
              replacements: [eventId],
              type: QueryTypes.INSERT,
              transaction,
            });
          } else if (shape === 'outboxkit') {
            await outbox.fire('order.created', payloadFor(i), { transaction });
          }
        });
      for (let i = 0; i < 100; i++) await one(i); // warm-up
      const t0 = now();
      for (let i = 0; i < tx; i++) await one(i);
      return tx / ((now() - t0) / 1000);
    } finally {
      await outbox.close();
      await sequelize.close();
    }
  });
}

const median = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** The compare run on MariaDB (see the module header). */
export async function mariadbCompare(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      dialect: { type: 'string' },
      rounds: { type: 'string', default: '2' },
      events: { type: 'string', default: '20000' },
      tx: { type: 'string', default: '1000' },
    },
    strict: false,
  });
  const rounds = Number(values.rounds);
  const events = Number(values.events);
  const tx = Number(values.tx);
  const tasks: [string, string, string, () => Promise<number>][] = [
    ['drain transport', 'outboxkit', 'events/s', () => outboxkitDrain(events, 'transport')],
    ['drain transport', 'bare', 'events/s', () => bareTransport(events)],
    ['drain handler', 'outboxkit', 'events/s', () => outboxkitDrain(events, 'handler')],
    ['drain handler', 'bare', 'events/s', () => bareHandler(events)],
    ['write', 'base', 'tx/s', () => writeCost(tx, 'base')],
    ['write', 'bare-outbox', 'tx/s', () => writeCost(tx, 'bare-outbox')],
    ['write', 'outboxkit', 'tx/s', () => writeCost(tx, 'outboxkit')],
  ];
  const figures: Figure[] = [];
  for (let r = 0; r < rounds; r++) {
    // Each round in another order, so no system always runs first.
    const order = tasks.map((_, i) => tasks[(i + r) % tasks.length]!);
    for (const [figure, system, unit, run] of order) {
      process.stderr.write(`round ${r + 1}/${rounds}: ${figure}, ${system}…\n`);
      const value = await run();
      const line = {
        dialect: 'mariadb',
        round: r,
        figure,
        system,
        value: Math.round(value),
        unit,
        load1m: +loadavg()[0]!.toFixed(2),
      };
      process.stdout.write(`${JSON.stringify(line)}\n`);
      figures.push({ figure, system, value, unit });
    }
  }
  const med = (figure: string, system: string) =>
    median(figures.filter((f) => f.figure === figure && f.system === system).map((f) => f.value));
  const rows = [
    [
      'drain transport: outboxkit / bare',
      med('drain transport', 'outboxkit') / med('drain transport', 'bare'),
    ],
    [
      'drain handler: outboxkit / bare',
      med('drain handler', 'outboxkit') / med('drain handler', 'bare'),
    ],
    ['write: outboxkit / base (tx/s)', med('write', 'outboxkit') / med('write', 'base')],
    ['write: bare-outbox / base (tx/s)', med('write', 'bare-outbox') / med('write', 'base')],
    [
      'write: outboxkit / bare-outbox (tx/s)',
      med('write', 'outboxkit') / med('write', 'bare-outbox'),
    ],
  ] as const;
  process.stderr.write(
    `\nMariaDB, medians of ${rounds} round(s), ${events} events, ${tx} transactions:\n`,
  );
  for (const [figure, system] of [...new Set(tasks.map(([f, s]) => `${f}\u0000${s}`))].map((k) =>
    k.split('\u0000'),
  ))
    process.stderr.write(
      `  ${figure}, ${system}: ${Math.round(med(figure!, system!))} ${tasks.find(([f]) => f === figure)![2]}\n`,
    );
  for (const [name, ratio] of rows) process.stderr.write(`  ${name}: ${ratio.toFixed(2)}\n`);
}
