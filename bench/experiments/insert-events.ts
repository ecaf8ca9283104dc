/**
 * EXPERIMENT (issue 10 / issue 7, the write): what `insertEvents`' one statement costs on
 * PostgreSQL for 1, 10, 100, 1,000 and 10,000 events, per way of binding its rows.
 *
 * One schema made by `migrate()` (with a notify channel, as `fire()` writes by default).
 * For each batch size, `--rounds` rounds (fewer for the large sizes, see ROUNDS_OF); in
 * each round every variant in turn (the order rotates by one per round, so load hits them
 * alike): BEGIN, then the variant's bind built and its statement run as a named prepared
 * statement on one node-postgres connection (timed: `clientMs`, the bind's JavaScript,
 * node-postgres' serialisation of the parameters, the round trip and the server's work;
 * `bindMs`, the bind's JavaScript alone), then ROLLBACK (not timed; the tables are
 * TRUNCATEd after each round of 1,000 events or more, so every round writes into empty
 * tables). p50/p90 per variant and size. Then, per variant and size, `--explain` runs of
 * `EXPLAIN (ANALYZE)` of the same statement (rolled back): `serverMs`, the p50 of
 * PostgreSQL's planning plus execution time.
 *
 * Every variant writes one event with one delivery row per input, the envelope's fields
 * as `fire()` encodes them (payload and headers as JSON text):
 * - `arrays`: src/'s `insertEvents`, one PostgreSQL array per column through `unnest`
 *   (21 arrays, which node-postgres writes element by element in JavaScript);
 * - `json`: src/'s `insertEventsJson` (used from JSON_INSERT_FROM events), the same 21
 *   parameters each a JSON array (`JSON.stringify` per column, Dates as epoch ms) read by
 *   `json_array_elements_text` under `ROWS FROM`;
 * - `json-rows`: the rows as two JSON arrays of objects (one `JSON.stringify` per table,
 *   Dates as ISO text) read by `json_to_recordset` (bench only);
 * - `jsonb-rows`: the same through `jsonb_to_recordset($n::jsonb)` (bench only);
 * - one event only (`--sizes 1`): `one`, src's `insertOne` (scalars, one delivery row);
 *   `scalar`, the event's columns scalars and its delivery rows arrays (bench only);
 *   `bare`, the bare producer's hand-written INSERT and pg_notify.
 * An earlier run also priced splicing each payload into the document as raw JSON (no
 * second escape): no faster than `json-rows`, and a JSON `null` would read as SQL NULL.
 *
 *   npx tsx bench/experiments/insert-events.ts [--rounds 400] [--explain 5]
 *     [--sizes 1,10,100,1000,10000] [--only arrays,json]
 *
 * Results and what they say: bench/README.md, "Measured here (issue 10, the events' insert)".
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createOutbox, silentLogger } from '../../src/index.js';
import { postgresDialect as d, pgArray } from '../../src/storage/postgres/dialect.js';
import { keySlotLock, keySlotLocks } from '../../src/storage/postgres/key-locks.js';
import {
  bindJsonColumns,
  insertOneValues,
  KEYED_DELIVERY_COLUMNS,
  type KeyedDelivery,
  postgresStatements,
} from '../../src/storage/postgres/statements.js';
import { preparedName } from '../../src/storage/postgres/store.js';
import {
  columnList,
  DELIVERY_INSERT_COLUMNS,
  EVENT_INSERT_COLUMNS,
} from '../../src/storage/sql/columns.js';
import type { RowColumn } from '../../src/storage/sql/dialect.js';
import type { DeliveryRowInput, EventRowInput } from '../../src/storage/store.js';
import { type TableNames, tableNames } from '../../src/storage/tables.js';
import { bareStatements } from '../bare/statements.js';
import {
  benchConfig,
  dropSchema,
  emit,
  newSchemaName,
  note,
  nowMs,
  openSequelize,
  PG_URL,
  quantile,
  round,
} from '../common.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '400' },
    explain: { type: 'string', default: '5' },
    sizes: { type: 'string', default: '1,10,100,1000,10000' },
    only: { type: 'string' },
  },
});
const ROUNDS = Number(args.rounds);
const EXPLAINS = Number(args.explain);
const SIZES = args.sizes.split(',').map(Number);
const CHANNEL = 'outboxkit_bench';

/** Rounds for a batch size: `--rounds` for one event, fewer as the batch grows (≥ 5). */
const ROUNDS_OF = (size: number): number =>
  Math.max(5, Math.round(ROUNDS / Math.max(1, Math.sqrt(size) / 2)));

interface Variant {
  readonly name: string;
  readonly text: string;
  readonly bind: (events: readonly EventRowInput[]) => unknown[];
}

const deliveriesOf = (events: readonly EventRowInput[]): KeyedDelivery[] =>
  events.flatMap((e) => e.deliveries.map((delivery) => ({ eventUuid: e.uuid, delivery })));

/**
 * The rows-as-objects form (bench only): `json_to_recordset` of one JSON array of objects
 * per table, the events read once into `x` for the key locks and the insert; json columns
 * read as text and cast to jsonb, timestamps as ISO 8601 text. `jsonb: true` parses the
 * documents to jsonb first (`jsonb_to_recordset`).
 */
function rowsForm(t: TableNames, jsonb: boolean): string {
  const fn = jsonb ? 'jsonb_to_recordset($N::jsonb)' : 'json_to_recordset($N::json)';
  const record = (n: number, alias: string, columns: readonly RowColumn<unknown>[]) =>
    `(SELECT ${columns.map((c) => (c.type === 'json' ? `r.${c.name}::jsonb AS ${c.name}` : `r.${c.name}`)).join(', ')}
       FROM ${fn.replace('N', String(n))} AS r(${columns
         .map((c) => `${c.name} ${c.type === 'json' ? 'text' : pgArray(c.type).slice(0, -2)}`)
         .join(', ')})) AS ${alias}`;
  return `
      WITH x AS (SELECT * FROM ${record(1, 'j', EVENT_INSERT_COLUMNS as readonly RowColumn<unknown>[])}), l AS (
        ${keySlotLocks(t, 'ARRAY(SELECT ordering_key FROM x)')}
      ), e AS (
        INSERT INTO ${t.events} (${columnList(EVENT_INSERT_COLUMNS)})
        SELECT * FROM x
        WHERE (SELECT count(*) FROM l) >= 0
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING id, uuid, name, ordering_key
      ), d AS (
        INSERT INTO ${t.deliveries} (event_id, ${columnList(DELIVERY_INSERT_COLUMNS)}, ordering_key)
        SELECT e.id, ${DELIVERY_INSERT_COLUMNS.map((c) => `x.${c.name}`).join(', ')}, e.ordering_key
        FROM ${record(2, 'x', KEYED_DELIVERY_COLUMNS as readonly RowColumn<unknown>[])}
        JOIN e ON e.uuid = x.event_uuid
      ), n AS (SELECT pg_notify($3, t.name) FROM (SELECT DISTINCT name FROM e) t)
      SELECT e.id::text AS sequence, e.uuid::text AS uuid, (SELECT count(*) FROM n) AS notified FROM e`;
}

/**
 * One event as scalar parameters (bench only, 1 event): $1..$15 the event's columns,
 * $16..$20 its delivery rows as arrays (no uuid key: they all join the one event), $21
 * the channel.
 */
function scalarForm(t: TableNames): string {
  const okey = EVENT_INSERT_COLUMNS.findIndex((c) => c.name === 'ordering_key') + 1;
  const first = EVENT_INSERT_COLUMNS.length + 1;
  return `
      WITH l AS (
        ${keySlotLock(t, `$${okey}::text`)}
      ), e AS (
        INSERT INTO ${t.events} (${columnList(EVENT_INSERT_COLUMNS)})
        SELECT ${EVENT_INSERT_COLUMNS.map((c, i) => `$${i + 1}::${pgArray(c.type).slice(0, -2)}`).join(', ')}
        WHERE (SELECT count(*) FROM l) >= 0
        ON CONFLICT (idempotency_key) DO NOTHING
        RETURNING id, uuid, name, ordering_key
      ), d AS (
        INSERT INTO ${t.deliveries} (event_id, ${columnList(DELIVERY_INSERT_COLUMNS)}, ordering_key)
        SELECT e.id, ${DELIVERY_INSERT_COLUMNS.map((c) => `x.${c.name}`).join(', ')}, e.ordering_key
        FROM ${d.rowsParam(first, 'x', DELIVERY_INSERT_COLUMNS)} CROSS JOIN e
      ), n AS (SELECT pg_notify($${first + DELIVERY_INSERT_COLUMNS.length}, name) FROM e)
      SELECT e.id::text AS sequence, e.uuid::text AS uuid, (SELECT count(*) FROM n) AS notified FROM e`;
}

/** One JSON array of row objects (Dates as ISO 8601 through their toJSON). */
function bindRowObjects<T>(rows: readonly T[], columns: readonly RowColumn<T>[]): string {
  return JSON.stringify(
    rows.map((row) => {
      const o: Record<string, unknown> = {};
      for (const c of columns) o[c.name] = c.value(row);
      return o;
    }),
  );
}

function variants(t: TableNames): Variant[] {
  const sql = postgresStatements(t, CHANNEL);
  const rowObjects = (events: readonly EventRowInput[]) => [
    bindRowObjects(events, EVENT_INSERT_COLUMNS),
    bindRowObjects(deliveriesOf(events), KEYED_DELIVERY_COLUMNS),
    CHANNEL,
  ];
  const all: Variant[] = [
    {
      name: 'arrays',
      text: sql.insertEvents,
      bind: (events) => [
        ...d.bindRows(events, EVENT_INSERT_COLUMNS),
        ...d.bindRows(deliveriesOf(events), KEYED_DELIVERY_COLUMNS),
        CHANNEL,
      ],
    },
    {
      name: 'json',
      text: sql.insertEventsJson,
      bind: (events) => [
        ...(bindJsonColumns(events, EVENT_INSERT_COLUMNS) ?? []),
        ...(bindJsonColumns(deliveriesOf(events), KEYED_DELIVERY_COLUMNS) ?? []),
        CHANNEL,
      ],
    },
    {
      name: 'scalar',
      text: scalarForm(t),
      bind: (events) => {
        const e = events[0] as EventRowInput;
        return [
          ...EVENT_INSERT_COLUMNS.map((c) => c.value(e)),
          ...d.bindRows(e.deliveries, DELIVERY_INSERT_COLUMNS),
          CHANNEL,
        ];
      },
    },
    {
      name: 'one',
      text: sql.insertOne,
      bind: (events) => {
        const e = events[0] as EventRowInput;
        return [...insertOneValues(e, e.deliveries[0] as DeliveryRowInput), CHANNEL];
      },
    },
    {
      name: 'bare',
      text: bareStatements(t.schema ?? 'public').insertAndNotify,
      bind: (events) => {
        const e = events[0] as EventRowInput;
        return [e.uuid, e.name, e.payload, e.recordedAt, 'bench.receiver', CHANNEL];
      },
    },
    { name: 'json-rows', text: rowsForm(t, false), bind: rowObjects },
    { name: 'jsonb-rows', text: rowsForm(t, true), bind: rowObjects },
  ];
  const only = args.only?.split(',');
  return only ? all.filter((v) => only.includes(v.name)) : all;
}

/** `size` events as `fire()` encodes them: a small payload, one delivery row each. */
function envelopes(size: number): EventRowInput[] {
  const now = new Date();
  return Array.from({ length: size }, (_, n) => ({
    uuid: randomUUID(),
    name: 'bench.ping',
    version: 1,
    payload: JSON.stringify({ n, customer: `customer-${n}`, total: '12.50', status: 'new' }),
    headers: JSON.stringify({ traceparent: `00-${randomUUID().replace(/-/g, '')}-01` }),
    orderingKey: n % 10 === 0 ? `order-${n % 100}` : null,
    idempotencyKey: null,
    occurredAt: now,
    recordedAt: now,
    retentionSeconds: null,
    deleteWhen: null,
    actor: 'user:42',
    correlationId: randomUUID(),
    causedBy: null,
    suppressedReason: null,
    deliveries: [
      {
        receiverKey: 'bench.receiver',
        target: 'default',
        maxAttempts: 10,
        availableAt: now,
        dueAt: null,
      },
    ],
  }));
}

async function main(): Promise<void> {
  const schema = newSchemaName();
  const sequelize = openSequelize(2);
  const t = tableNames('outbox_', schema);
  const client = new pg.Client({ connectionString: PG_URL, application_name: 'insert-events' });
  await client.connect();
  let outbox: { close(): Promise<void> } | undefined;
  try {
    const made = createOutbox(benchConfig('noop-handler'), {
      sequelize,
      schema,
      wakeup: null,
      logger: silentLogger,
    });
    outbox = made;
    await made.migrate();
    const vs = variants(t);
    const truncate = `TRUNCATE ${t.deliveries}, ${t.events} CASCADE`;
    for (const size of SIZES) {
      const rounds = ROUNDS_OF(size);
      const client_: Record<string, number[]> = {};
      const bind_: Record<string, number[]> = {};
      for (const v of vs) {
        client_[v.name] = [];
        bind_[v.name] = [];
      }
      note(
        `insert-events: ${size} events, ${rounds} rounds of ${vs.map((v) => v.name).join(', ')}`,
      );
      for (let r = -1; r < rounds; r++) {
        for (let i = 0; i < vs.length; i++) {
          const v = vs[(i + Math.max(0, r)) % vs.length] as Variant;
          const events = envelopes(size);
          await client.query('BEGIN');
          const t0 = nowMs();
          const values = v.bind(events);
          const t1 = nowMs();
          const res = await client.query({
            name: preparedName(v.name, v.text),
            text: v.text,
            values,
          });
          const t2 = nowMs();
          await client.query('ROLLBACK');
          if (res.rowCount !== size) throw new Error(`${v.name}: wrote ${res.rowCount} of ${size}`);
          if (r >= 0) {
            client_[v.name]?.push(t2 - t0);
            bind_[v.name]?.push(t1 - t0);
          }
        }
        if (size >= 1000) await client.query(truncate);
      }
      await client.query(truncate);
      const server: Record<string, number[]> = {};
      for (let r = 0; r < EXPLAINS; r++) {
        for (const v of vs) {
          await client.query('BEGIN');
          const plan = await client.query({
            text: `EXPLAIN (ANALYZE) ${v.text}`,
            values: v.bind(envelopes(size)),
          });
          await client.query('ROLLBACK');
          if (size >= 1000) await client.query(truncate);
          const lines = plan.rows.map((row: Record<string, string>) => row['QUERY PLAN'] ?? '');
          const ms = (what: RegExp) =>
            Number(what.exec(lines.find((l) => what.test(l)) ?? '')?.[1] ?? Number.NaN);
          const times = server[v.name] ?? [];
          server[v.name] = times;
          times.push(ms(/Planning Time: ([\d.]+) ms/) + ms(/Execution Time: ([\d.]+) ms/));
        }
      }
      const base = quantile(
        [...(client_.arrays ?? client_[vs[0]?.name ?? ''] ?? [])].sort((a, b) => a - b),
        0.5,
      );
      for (const v of vs) {
        const c = [...(client_[v.name] ?? [])].sort((a, b) => a - b);
        const b = [...(bind_[v.name] ?? [])].sort((a, b) => a - b);
        const s = [...(server[v.name] ?? [])].sort((a, b) => a - b);
        emit({
          bench: 'insert-events',
          variant: v.name,
          events: size,
          rounds,
          clientP50: round(quantile(c, 0.5)),
          clientP90: round(quantile(c, 0.9)),
          bindP50: round(quantile(b, 0.5)),
          serverP50: round(quantile(s, 0.5)),
          vsArraysP50: round(quantile(c, 0.5) / base),
        });
      }
    }
  } finally {
    await client.end();
    await outbox?.close();
    await dropSchema(sequelize, schema);
    await sequelize.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `insert-events failed: ${error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exitCode = 1;
});
