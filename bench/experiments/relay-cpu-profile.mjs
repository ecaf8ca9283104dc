/**
 * Profile the relay's drain on COMPILED code (dist/, so tsx's per-closure helpers do not
 * distort it): seed a backlog, then one in-process relay drains it to a no-op receiver.
 With `--profile FILE` the drain alone (not the seed) is profiled through the inspector
 * (as `node --cpu-prof` would, 100 µs sampling) and written to FILE; summarise with
 * relay-cpu-summary.mjs. Prints events/s and client CPU (user + system) per event.
 *
 *   npm run build
 *   node bench/experiments/relay-cpu-profile.mjs --events 50000 --kind noop-deliver-batch --profile /tmp/relay.cpuprofile
 *   node bench/experiments/relay-cpu-summary.mjs /tmp/relay.cpuprofile
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Sequelize } from 'sequelize';
import { z } from 'zod';
import { createOutbox, defineOutbox, event, receiver, silentLogger } from '../../dist/src/index.js';

const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const total = Number(arg('events', '50000'));
const kind = arg('kind', 'noop-deliver-batch');
const listen = args.includes('--listen');
const url = process.env.OUTBOX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `prof_${randomBytes(4).toString('hex')}`;
const Ping = event({ schema: z.object({ n: z.number().int(), note: z.string() }) });
const deliver =
  kind === 'noop-delivery'
    ? async () => {}
    : { name: 'noop-batch', deliverBatch: async () => undefined };
const config = defineOutbox({
  events: { 'bench.Ping': Ping },
  receivers: { noop: receiver('bench.Ping', { deliver }) },
});
const sequelize = new Sequelize(url, { logging: false, pool: { max: 4, min: 0 } });
await sequelize.query(`CREATE SCHEMA "${schema}"`);
const outbox = createOutbox(config, { sequelize, schema, wakeup: null, logger: silentLogger });
await outbox.migrate();
for (let from = 0; from < total; from += 1000) {
  const size = Math.min(1000, total - from);
  await outbox.fireMany(
    Array.from({ length: size }, (_, i) => ({
      name: 'bench.Ping',
      payload: { n: from + i, note: 'backlog' },
    })),
  );
}
await sequelize.query(`ANALYZE "${schema}"."outbox_events"`);
await sequelize.query(`ANALYZE "${schema}"."outbox_deliveries"`);
let delivered = 0;
if (listen) outbox.on('relay:delivered', () => void delivered++);
const cpu0 = process.cpuUsage();
const profileTo = arg('profile', undefined);
const session = profileTo ? new Session() : undefined;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
}
const started = performance.now();
const report = await outbox.runRelay({ untilIdle: true, batchSize: 500 });
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpu0);
if (session) {
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(profileTo, JSON.stringify(profile));
  session.disconnect();
}
const sent = report.succeeded;
process.stdout.write(
  `${JSON.stringify({ kind, events: sent, seconds: +seconds.toFixed(3), eventsPerSecond: Math.round(sent / seconds), cpuUsPerEvent: +((cpu.user + cpu.system) / sent).toFixed(2), userUsPerEvent: +(cpu.user / sent).toFixed(2), listen, delivered })}\n`,
);
await outbox.close();
await sequelize.query(`DROP SCHEMA "${schema}" CASCADE`);
await sequelize.close();
