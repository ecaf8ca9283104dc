/**
 * EXPERIMENT (issue 7, the claim): commit → handler start split in place, in one process.
 * A relay (`runRelay`, LISTEN/NOTIFY wakeup, batch 100, concurrency 10, as the latency
 * bench's) and a producer on its own node-postgres connection (the bare producer's one
 * statement: event, delivery, NOTIFY; BEGIN … COMMIT) at `--rate` events/s. The store's
 * `claim` is wrapped (timing only) to stamp when each claim that took rows started and
 * ended. Prints p50/p90/p99 of commit → claim start, the claim, claim end → handler start,
 * and commit → start (the first second left out as warm-up). The statement alone, and its
 * variants, is `claim-variants.ts`' figure. In one process, the NOTIFY can reach the relay
 * before the producer reads its COMMIT's reply: commit → claim start may be negative.
 *
 * `--consumer bare` runs the bare loop's latency mode in the relay's place (its own
 * connections, the same claim text; "start" = its claim returned), to compare each part.
 *
 *   npx tsx bench/experiments/claim-in-relay.ts [--rate 200] [--seconds 10] [--history 0] [--consumer relay|bare]
 */
import { parseArgs } from 'node:util';
import { createOutbox, listenNotifyWakeup, silentLogger } from '../../src/index.js';
import { runtimeOf } from '../../src/runtime.js';
import type { ClaimOptions } from '../../src/storage/store.js';
import { runBareLatencyLoop } from '../bare/latency-loop.js';
import { bareStatements, type ClaimedRow, claimValues } from '../bare/statements.js';
import {
  benchConfig,
  newSchemaName,
  nowMs,
  openSequelize,
  quantile,
  round,
  sleep,
  wholeNumberOption,
} from '../common.js';
import { connectPg, dropSchemaPg, settle } from '../pg.js';
import { seedSettled } from '../seed.js';

const { values: args } = parseArgs({
  options: {
    rate: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '10' },
    history: { type: 'string', default: '0' },
    consumer: { type: 'string', default: 'relay' },
  },
});
const CONSUMER = args.consumer;
if (CONSUMER !== 'relay' && CONSUMER !== 'bare')
  throw new Error(`--consumer: relay or bare (got ${CONSUMER})`);
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);

async function main(): Promise<void> {
  const schema = newSchemaName();
  const channel = `${schema}_wake`;
  const sequelize = openSequelize(12);
  const starts = new Map<number, number>();
  const outbox = createOutbox(
    benchConfig('probe-handler', (e) => starts.set((e.payload as { n: number }).n, nowMs())),
    { sequelize, schema, wakeup: listenNotifyWakeup({ channel }), logger: silentLogger },
  );
  const producer = await connectPg('claim-in-relay-producer');
  try {
    await outbox.migrate();
    const history = wholeNumberOption('history', args.history);
    await seedSettled(sequelize, schema, history, "interval '1 hour'");
    await settle(schema);
    // The claim's stamps, by event number of each row it took.
    const claimStart = new Map<number, number>();
    const claimEnd = new Map<number, number>();
    const { store } = runtimeOf(outbox);
    const claim = store.claim.bind(store);
    store.claim = async (o: ClaimOptions) => {
      const started = nowMs();
      const rows = await claim(o);
      const ended = nowMs();
      for (const r of rows) {
        const n = (r.event.payload as { n: number }).n;
        claimStart.set(n, started);
        claimEnd.set(n, ended);
      }
      return rows;
    };
    await sequelize.authenticate();
    const stop = new AbortController();
    const running =
      CONSUMER === 'relay'
        ? outbox.runRelay({
            signal: stop.signal,
            workerId: 'claim-in-relay',
            batchSize: 100,
            concurrency: 10,
            pollIntervalMs: 1000,
          })
        : bareLoop(schema, channel, stop.signal, (n, started, ended) => {
            claimStart.set(n, started);
            claimEnd.set(n, ended);
            starts.set(n, ended); // the bare loop's "start": its claim returned
          });
    await sleep(500);
    const insert = bareStatements(schema).insertAndNotify;
    const committed = new Map<number, number>();
    const total = Math.round(RATE * (SECONDS + 1));
    const t0 = nowMs() + 50;
    for (let n = 0; n < total; n++) {
      const due = t0 + (n * 1000) / RATE;
      const wait = due - nowMs();
      if (wait > 1) await sleep(wait - 1);
      while (nowMs() < due) {
        // spin the last millisecond, as the bench's producer does
      }
      await producer.query('BEGIN');
      await producer.query({
        name: 'produce',
        text: insert,
        values: [
          crypto.randomUUID(),
          'bench.Ping',
          JSON.stringify({ n, note: 'latency' }),
          new Date(),
          'noop',
          channel,
        ],
      });
      await producer.query('COMMIT');
      committed.set(n, nowMs());
    }
    const deadline = nowMs() + 3000;
    while (starts.size < total && nowMs() < deadline) await sleep(20);
    stop.abort();
    await running;
    const parts: Record<string, number[]> = {
      commitToClaimStart: [],
      claim: [],
      claimEndToStart: [],
      commitToStart: [],
    };
    for (let n = Math.round(RATE); n < total; n++) {
      const c = committed.get(n);
      const s = starts.get(n);
      const cs = claimStart.get(n);
      const ce = claimEnd.get(n);
      if (c === undefined || s === undefined || cs === undefined || ce === undefined) continue;
      parts.commitToClaimStart.push(cs - c);
      parts.claim.push(ce - cs);
      parts.claimEndToStart.push(s - ce);
      parts.commitToStart.push(s - c);
    }
    const out: Record<string, unknown> = {
      bench: 'claim-in-relay',
      consumer: CONSUMER,
      rate: RATE,
      history,
    };
    for (const [k, v] of Object.entries(parts)) {
      v.sort((a, b) => a - b);
      out[k] = {
        p50: round(quantile(v, 0.5)),
        p90: round(quantile(v, 0.9)),
        p99: round(quantile(v, 0.99)),
        n: v.length,
      };
    }
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    await producer.end();
    await outbox.close();
    await sequelize.close();
    await dropSchemaPg(schema);
  }
}

/**
 * `--consumer bare`: the bare loop's latency mode (bare/worker.ts) in this process, on
 * connections of its own: LISTEN, the same claim text prepared on a connection that only
 * claims, the rows marked succeeded on a third. Its "start" is its claim's return.
 */
async function bareLoop(
  schema: string,
  channel: string,
  signal: AbortSignal,
  stamp: (n: number, started: number, ended: number) => void,
): Promise<void> {
  const sql = bareStatements(schema);
  const claimer = await connectPg('claim-in-relay-bare-claim');
  const marker = await connectPg('claim-in-relay-bare-mark');
  const listener = await connectPg('claim-in-relay-bare-listen');
  try {
    await runBareLatencyLoop({
      listener,
      channel,
      claim: async (now) =>
        (
          await claimer.query<ClaimedRow>({
            name: 'bare_claim',
            text: sql.claim,
            values: claimValues('claim-in-relay-bare', 100, now),
          })
        ).rows,
      batchSize: 100,
      claimed: (rows, started, ended) => {
        for (const r of rows) stamp(r.event_payload.n, started, ended);
      },
      mark: (rows) =>
        marker.query({
          name: 'bare_mark',
          text: sql.markSucceeded,
          values: [rows.map((r) => r.id), new Date()],
        }),
      pollIntervalMs: 1000,
      signal,
    });
  } finally {
    await Promise.all([claimer.end(), marker.end(), listener.end()]);
  }
}

await main();
