/**
 * What the deliveries table's fill factor of 40 % (migration 4, docs/storage.md: it keeps
 * the claim's and the verdict's updates HOT, on their row's own page) costs on disk
 * (issue 28): N events fired (one transport delivery row each) and delivered by one relay to a
 * no-op `deliverBatch`, then `pg_total_relation_size` of the events and deliveries tables
 * (heap, indexes, TOAST) per event — in a schema migrated as shipped, and in a scratch
 * schema migrated the same way and then given `ALTER TABLE … SET (fillfactor = 100)`
 * before its first row (a fill factor applies to pages written after it is set, and the
 * table is still empty then). Nothing is vacuumed or pruned in between: the figure is the
 * tables as a relay leaves them (and the deliveries table as the backlog left it, fired and
 * not yet delivered: `deliveriesBeforeDrain`).
 *
 * `npx tsx bench/experiments/fillfactor-size.ts [events=20000] [rounds=1]`: one JSON line
 * per schema on stdout.
 */
import { pathToFileURL } from 'node:url';
import { QueryTypes } from 'sequelize';
import {
  createOutbox,
  type DeliveryResult,
  defineOutbox,
  receiver,
  silentLogger,
} from '../../src/index.js';
import { dropSchema, emit, newSchemaName, note, openSequelize, Ping } from '../common.js';
import { seedBacklog } from '../seed.js';

const SENT: DeliveryResult = { status: 'sent' };

async function measure(events: number, fillfactor: 40 | 100) {
  const sequelize = openSequelize(4);
  const schema = newSchemaName();
  const outbox = createOutbox(
    defineOutbox({
      events: { 'bench.Ping': Ping },
      receivers: {
        to: receiver('bench.Ping', {
          deliver: { deliverBatch: async (items) => items.map(() => SENT) },
        }),
      },
    }),
    { sequelize, schema, wakeup: null, logger: silentLogger },
  );
  try {
    await outbox.migrate();
    const q = (sql: string) => sequelize.query(sql, { type: QueryTypes.SELECT });
    const tables = [`"${schema}"."outbox_events"`, `"${schema}"."outbox_deliveries"`];
    const [{ options }] = (await q(
      `SELECT reloptions::text AS options FROM pg_class WHERE oid = '${tables[1]}'::regclass`,
    )) as { options: string | null }[];
    if (fillfactor === 100)
      await sequelize.query(`ALTER TABLE ${tables[1]} SET (fillfactor = 100)`);
    const size = async (table: string) => {
      const [row] = (await q(
        `SELECT pg_relation_size('${table}') AS heap, pg_indexes_size('${table}') AS indexes,
                pg_total_relation_size('${table}') AS total`,
      )) as { heap: string; indexes: string; total: string }[];
      return { heap: Number(row.heap), indexes: Number(row.indexes), total: Number(row.total) };
    };
    note(`fillfactor-size: ${events} events, deliveries fillfactor ${fillfactor} (${options}) …`);
    await seedBacklog(outbox, events);
    const backlog = await size(tables[1]);
    const report = await outbox.runRelay({ untilIdle: true, batchSize: 500 });
    if (report.succeeded !== events) throw new Error(`drained ${report.succeeded} of ${events}`);
    const [ev, del] = [await size(tables[0]), await size(tables[1])];
    const per = (bytes: number) => Math.round(bytes / events);
    return {
      bench: 'fillfactor-size',
      events,
      deliveriesFillfactor: fillfactor,
      bytesPerEvent: {
        total: per(ev.total + del.total),
        events: { heap: per(ev.heap), indexes: per(ev.indexes), total: per(ev.total) },
        deliveries: { heap: per(del.heap), indexes: per(del.indexes), total: per(del.total) },
        // The deliveries table with the backlog fired and nothing delivered yet.
        deliveriesBeforeDrain: {
          heap: per(backlog.heap),
          indexes: per(backlog.indexes),
          total: per(backlog.total),
        },
      },
    };
  } finally {
    await outbox.close();
    await dropSchema(sequelize, schema);
    await sequelize.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [events = '20000', rounds = '1'] = process.argv.slice(2);
  for (let r = 0; r < Number(rounds); r++)
    for (const ff of [40, 100] as const) emit(await measure(Number(events), ff));
}
