/**
 * One producer of a latency run, in its own process with its own connection: it fires one
 * event per transaction on a fixed schedule and notes when each COMMIT returned, on the
 * monotonic clock every process of the machine shares. argv[2] is a {@link ProducerOptions}
 * JSON. With N producers at R events/s, producer i fires events n = i, i + N, … at
 * `t0 + n / R` (t0 comes with `go`), so together they fire R/s, interleaved.
 *
 * What one event is, per system (each a BEGIN, one statement, a COMMIT):
 * - `outboxkit`: `outbox.fire()` in a Sequelize transaction, with `listenNotifyWakeup()`
 *   (its INSERT queues the NOTIFY) or the run's broker wakeup (bench/wakeups.ts: a signal
 *   after COMMIT returned), as an application fires;
 * - `bare`: node-postgres, the hand-written INSERT of the event and delivery rows plus
 *   `pg_notify` in one prepared statement (`bare/statements.ts`); so does `outboxkit`
 *   with `statement: 'sql'` (ProducerOptions.statement);
 * - `graphile`: `SELECT <schema>.add_job('ping', $1)` (graphile-worker's SQL API, which
 *   NOTIFYs its workers itself), prepared;
 * - `pgboss`: a plain `INSERT INTO <schema>.job (name, data)` (pg-boss polls; it has no
 *   NOTIFY), prepared.
 *
 * With `synchronousCommit: false` the producer's connection commits without waiting for
 * its WAL flush (the consumers' do not change).
 *
 * A single producer spins the last millisecond before each due time (setTimeout fires up
 * to ~1 ms late); several producers only sleep, since spinning N processes would take the
 * cores the relay needs. `late` counts events fired more than this producer's own interval
 * behind schedule. Producers that cannot keep up stop `graceMs` after the schedule's end,
 * leaving the rest unfired. The COMMIT times go to the parent in one `committed` message
 * at the end.
 */
import { randomUUID } from 'node:crypto';
import { createOutbox, silentLogger } from '../src/index.js';
import { bareStatements } from './bare/statements.js';
import { parentOrders, runChild, send } from './child.js';
import { benchConfig, nowMs, openSequelize, sleep } from './common.js';
import { connectPg } from './pg.js';
import type { ProducerOptions } from './protocol.js';
import { benchWakeup } from './wakeups.js';

/** Fire event n in one transaction; resolves once COMMIT returned. */
type Fire = (n: number) => Promise<void>;

async function setUp(o: ProducerOptions): Promise<{ fire: Fire; close(): Promise<void> }> {
  if (o.system === 'outboxkit' && o.statement !== 'sql') {
    const sequelize = openSequelize(1);
    if (o.synchronousCommit === false) {
      sequelize.addHook('afterConnect', async (connection) => {
        await (connection as { query(sql: string): Promise<unknown> }).query(
          'SET synchronous_commit = off',
        );
      });
    }
    const outbox = createOutbox(benchConfig('probe-handler'), {
      sequelize,
      schema: o.schema,
      wakeup: benchWakeup(o.wakeup ?? 'listen-notify', o.notifyChannel ?? 'outboxkit'),
      logger: silentLogger,
    });
    await sequelize.authenticate();
    return {
      fire: async (n) => {
        const transaction = await sequelize.transaction();
        await outbox.fire('bench.Ping', { n, note: 'latency' }, { transaction });
        await transaction.commit();
      },
      close: async () => {
        await outbox.close();
        await sequelize.close();
      },
    };
  }
  const client = await connectPg(`bench-producer-${o.system}`);
  if (o.synchronousCommit === false) await client.query('SET synchronous_commit = off');
  // outboxkit with `statement: 'sql'` writes as the bare producer does, into its tables.
  const bare = o.system === 'bare' || o.system === 'outboxkit';
  const statement = bare
    ? { name: 'bench_produce', text: bareStatements(o.schema).insertAndNotify }
    : o.system === 'graphile'
      ? { name: 'bench_produce', text: `SELECT "${o.schema}".add_job('ping', $1::json)` }
      : {
          name: 'bench_produce',
          text: `INSERT INTO "${o.schema}".job (name, data) VALUES ('ping', $1::jsonb)`,
        };
  const values = (n: number): unknown[] => {
    const payload = JSON.stringify({ n, note: 'latency' });
    return bare
      ? [randomUUID(), 'bench.Ping', payload, new Date(), 'noop', o.notifyChannel]
      : [payload];
  };
  return {
    fire: async (n) => {
      await client.query('BEGIN');
      await client.query({ ...statement, values: values(n) });
      await client.query('COMMIT');
    },
    close: () => client.end(),
  };
}

async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2] ?? '{}') as ProducerOptions;
  const { fire, close } = await setUp(o);
  const { go, stopped } = parentOrders();
  send({ type: 'ready' });
  const order = await go;
  const t0 = order?.t0Ms ?? nowMs();
  const intervalMs = 1000 / o.rate;
  const ownIntervalMs = intervalMs * o.count;
  const spin = o.count === 1;
  const stopAt = t0 + o.total * intervalMs + o.graceMs;
  const ns: number[] = [];
  const ats: number[] = [];
  let late = 0;
  try {
    for (let n = o.index; n < o.total && !stopped.aborted && nowMs() < stopAt; n += o.count) {
      const due = t0 + n * intervalMs;
      const wait = due - nowMs();
      if (spin) {
        if (wait > 1) await sleep(wait - 1);
        while (nowMs() < due) {
          // Spin the last millisecond: setTimeout alone fires up to ~1 ms late.
        }
      } else if (wait > 0) await sleep(wait);
      if (nowMs() - due > ownIntervalMs) late += 1;
      await fire(n);
      ns.push(n);
      ats.push(nowMs());
    }
  } finally {
    send({ type: 'committed', n: ns, atMs: ats, late });
    send({ type: 'done', report: { fired: ns.length, late }, delivered: ns.length });
    await close();
  }
}

runChild(main);
