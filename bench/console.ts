/**
 * The console's pages on a 1,000,000-event outbox (issue 32: "the first page renders in
 * < 200 ms"): `npm run bench -- --only console [--console-events 1000000]`, or on its own,
 * `npx tsx bench/console.ts [events]`.
 *
 * Seeds, set-based (`INSERT … SELECT generate_series`), `events` events of one topic with
 * two delivery rows each, as an outbox in service holds them: nearly all succeeded, 1,000
 * dead letters, 5,000 owed (a fifth of them behind a dead letter of their ordering key), a
 * scheduled row per 100 events; ordering keys over 5,000 keys. Then serves
 * `createConsoleHandler` on a local HTTP server and times each page's first request after
 * `VACUUM (ANALYZE)` + `CHECKPOINT` (`firstMs`: cold connections, cold statement caches)
 * and the median and p95 of 20 more (`medianMs`, `p95Ms`), over HTTP, body read whole.
 * One JSON line per page on stdout; what it does on stderr.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { createConsoleHandler } from '../console/index.js';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../src/index.js';
import { dropSchema, emit, newSchemaName, note, openSequelize, quantile, round } from './common.js';
import { settle } from './pg.js';

/** Options of {@link benchConsole}. */
export interface ConsoleBenchOptions {
  /** How many events the outbox holds. */
  readonly events: number;
  /** Requests timed per page after the first. */
  readonly repeats?: number;
}

const config = defineOutbox({
  events: {
    'shop.OrderPlaced': event({ schema: z.object({ n: z.number(), note: z.string() }) }),
  },
  receivers: {
    'mail.send': receiver('shop.OrderPlaced', { handle: () => {}, maxAttempts: 5 }),
    'ledger.post': receiver('shop.OrderPlaced', { handle: () => {}, lane: 'ledger' }),
  },
});

/** Seed, serve and time the console's pages (see the module comment). */
export async function benchConsole(options: ConsoleBenchOptions): Promise<void> {
  const repeats = options.repeats ?? 20;
  const n = options.events;
  const schema = newSchemaName();
  const sequelize = openSequelize(4);
  try {
    await sequelize.query(`CREATE SCHEMA "${schema}"`);
    const outbox = createOutbox(config, { sequelize, schema, wakeup: null, logger: silentLogger });
    await outbox.migrate();
    const s = `"${schema}"`;
    const seeded = performance.now();
    note(`console: seeding ${n} events (${2 * n} delivery rows) in ${schema} …`);
    for (let from = 1; from <= n; from += 200_000) {
      const to = Math.min(n, from + 199_999);
      await sequelize.query(`
        INSERT INTO ${s}.outbox_events (uuid, name, payload, headers, occurred_at, recorded_at, ordering_key)
        SELECT gen_random_uuid(), 'shop.OrderPlaced', jsonb_build_object('n', g, 'note', 'order ' || g),
               jsonb_build_object('x-request-id', 'req-' || g),
               now() - ((${n} - g) || ' seconds')::interval, now() - ((${n} - g) || ' seconds')::interval,
               'order-' || (g % 5000)
        FROM generate_series(${from}, ${to}) g`);
    }
    // The last 5,000 events are owed; 1,000 of the 1,000 before them dead (mail.send).
    for (let from = 1; from <= n; from += 200_000) {
      const to = Math.min(n, from + 199_999);
      await sequelize.query(`
        INSERT INTO ${s}.outbox_deliveries (event_id, receiver_key, status, attempts, max_attempts,
          available_at, due_at, completed_at, succeeded_at, last_error, ordering_key)
        SELECT e.id, k.r,
               CASE WHEN e.id > ${n - 5000} THEN 'pending'
                    WHEN k.r = 'mail.send' AND e.id > ${n - 6000} THEN 'dead'
                    ELSE 'succeeded' END,
               CASE WHEN k.r = 'mail.send' AND e.id > ${n - 6000} AND e.id <= ${n - 5000} THEN 5 ELSE 1 END, 5,
               e.recorded_at,
               CASE WHEN e.id % 100 = 0 AND e.id > ${n - 5000} THEN now() + interval '1 day' END,
               CASE WHEN e.id <= ${n - 5000} THEN e.recorded_at END,
               CASE WHEN e.id <= ${n - 6000} OR (k.r = 'ledger.post' AND e.id <= ${n - 5000}) THEN e.recorded_at END,
               CASE WHEN k.r = 'mail.send' AND e.id > ${n - 6000} AND e.id <= ${n - 5000} THEN 'Error: smtp is down' END,
               e.ordering_key
        FROM ${s}.outbox_events e, (VALUES ('mail.send'), ('ledger.post')) AS k(r)
        WHERE e.id BETWEEN ${from} AND ${to}`);
    }
    note(`console: seeded in ${round((performance.now() - seeded) / 1000, 1)} s; settling …`);
    await settle(schema);
    const [[some]] = (await sequelize.query(
      `SELECT uuid FROM ${s}.outbox_events WHERE id = ${n - 5500}`,
    )) as [{ uuid: string }[], unknown];
    const handler = createConsoleHandler(outbox, { sampleIntervalMs: 0 });
    const server = createServer((req, res) => void handler(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const pages: [string, string][] = [
      ['health', '/'],
      ['dead letters', '/dead'],
      ['dead letters, page 2', '/dead?after=CURSOR'],
      ['events', '/events'],
      ['event', `/events/${some.uuid}`],
      ['ordering key', '/events?key=order-7'],
      ['quiet receivers', '/quiet'],
      ['catalogue', '/catalogue'],
    ];
    const time = async (path: string) => {
      const t = performance.now();
      const res = await fetch(base + path);
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text.slice(0, 300)}`);
      return { ms: performance.now() - t, text };
    };
    try {
      let cursor = '';
      for (const [page, template] of pages) {
        const path = template.replace('CURSOR', cursor);
        const first = await time(path);
        if (page === 'dead letters')
          cursor = decodeURIComponent(/\/dead\?after=([^"&]+)/.exec(first.text)?.[1] ?? '');
        const ms: number[] = [];
        for (let i = 0; i < repeats; i++) ms.push((await time(path)).ms);
        ms.sort((a, b) => a - b);
        emit({
          bench: 'console',
          page,
          path: template,
          events: n,
          deliveries: 2 * n,
          firstMs: round(first.ms, 1),
          medianMs: round(quantile(ms, 0.5), 1),
          p95Ms: round(quantile(ms, 0.95), 1),
          bytes: first.text.length,
        });
      }
    } finally {
      handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await outbox.close();
    }
  } finally {
    await dropSchema(sequelize, schema);
    await sequelize.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const events = Number(process.argv[2] ?? 1_000_000);
  benchConsole({ events }).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
