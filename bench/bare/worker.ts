/**
 * The bare SQL loops: what a relay costs with nothing but node-postgres and prepared
 * statements, in a process of its own like each relay (`relay-worker.ts`). argv[2] is a
 * {@link BareWorkerOptions} JSON. Three modes, each the limit of one outboxkit figure:
 *
 * - `transport`: claim `batchSize` rows (src/'s claim, prepared), mark them succeeded in one
 *   prepared UPDATE by primary key, repeat. The limit of a relay with a no-op transport.
 * - `handler`: claim a batch the same way, then `concurrency` connections in parallel, per
 *   row: `BEGIN`, src/'s acknowledgement (prepared), `COMMIT`; when the batch is done, the
 *   next claim. The limit of a relay with a no-op handler (one transaction per event).
 * - `latency`: LISTEN on a channel; on each NOTIFY claim until a claim comes back short,
 *   stamping "start" on every row the moment its claim returned, and mark them succeeded
 *   on a second connection without waiting; a poll backs up a lost NOTIFY. The limit of
 *   commit → start.
 *
 * Drains wait for `go` after `ready`; the latency loop starts at once, then says `ready`.
 */
import type { ClientBase } from 'pg';
import {
  cpuReport,
  parentOrders,
  probeReporter,
  progressReporter,
  runChild,
  send,
} from '../child.js';
import { nowMs, sleep } from '../common.js';
import { connectPg, type PgClient } from '../pg.js';
import type { BareWorkerOptions } from '../protocol.js';
import { runBareLatencyLoop } from './latency-loop.js';
import { bareStatements, type ClaimedRow, claimValues } from './statements.js';

async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2] ?? '{}') as BareWorkerOptions;
  const sql = bareStatements(o.schema);
  const claimer = await connectPg(`bench-bare-${o.mode}`);
  const clients: PgClient[] = [claimer];
  const progress = progressReporter(nowMs);
  const { go, stopped } = parentOrders();
  let claims = 0;

  const claim = async (now: Date): Promise<ClaimedRow[]> => {
    claims += 1;
    const result = await claimer.query<ClaimedRow>({
      name: 'bare_claim',
      text: sql.claim,
      values: claimValues(o.workerId, o.batchSize, now),
    });
    return result.rows;
  };
  const mark = (client: ClientBase, rows: readonly ClaimedRow[]) =>
    client.query({
      name: 'bare_mark',
      text: sql.markSucceeded,
      values: [rows.map((r) => r.id), new Date()],
    });

  try {
    if (o.mode === 'transport') {
      if (o.warmupSchema) await warmUp(o.warmupSchema);
      send({ type: 'ready' });
      await go;
      while (!stopped.aborted) {
        const rows = await claim(new Date());
        if (rows.length === 0) {
          await sleep(50); // drained: poll like the relay until told to stop
          continue;
        }
        await mark(claimer, rows);
        progress.add(rows.length);
      }
    } else if (o.mode === 'handler') {
      for (let i = 0; i < o.concurrency; i++) clients.push(await connectPg('bench-bare-ack'));
      const lanes = clients.slice(1);
      send({ type: 'ready' });
      await go;
      while (!stopped.aborted) {
        const claimedAt = new Date();
        const rows = await claim(claimedAt);
        if (rows.length === 0) {
          await sleep(50);
          continue;
        }
        let next = 0;
        await Promise.all(
          lanes.map(async (client) => {
            while (next < rows.length) {
              const row = rows[next++];
              await client.query('BEGIN');
              const acked = await client.query({
                name: 'bare_ack',
                text: sql.acknowledge,
                values: [o.workerId, claimedAt, row.id, new Date()],
              });
              await client.query('COMMIT');
              if (acked.rowCount !== 1) throw new Error(`bare ack of ${row.id} changed nothing`);
              progress.add(1);
            }
          }),
        );
      }
    } else {
      await latencyLoop(o, claim, mark, clients, stopped);
    }
  } finally {
    send({
      type: 'done',
      report: { passes: claims, ...cpuReport() },
      delivered: progress.delivered,
    });
    await Promise.all(clients.map((c) => c.end().catch(() => {})));
  }

  /**
   * The transport loop over a backlog of its own, untimed, until a claim finds nothing:
   * the same statements on the same connection (prepared under names of their own, as
   * their text names another schema), as the relay warms up (DrainOptions.warmupEvents).
   */
  async function warmUp(schema: string): Promise<void> {
    const w = bareStatements(schema);
    for (;;) {
      const { rows } = await claimer.query<ClaimedRow>({
        name: 'bare_claim_warmup',
        text: w.claim,
        values: claimValues(`${o.workerId}-warmup`, o.batchSize, new Date()),
      });
      if (rows.length === 0) return;
      await claimer.query({
        name: 'bare_mark_warmup',
        text: w.markSucceeded,
        values: [rows.map((r) => r.id), new Date()],
      });
    }
  }

  async function latencyLoop(
    options: BareWorkerOptions,
    claimRows: (now: Date) => Promise<ClaimedRow[]>,
    markRows: (client: ClientBase, rows: readonly ClaimedRow[]) => Promise<unknown>,
    all: PgClient[],
    signal: AbortSignal,
  ): Promise<void> {
    const marker = await connectPg('bench-bare-mark');
    const listener = await connectPg('bench-bare-listen');
    all.push(marker, listener);
    const starts = probeReporter();
    const acks = probeReporter(true);
    await runBareLatencyLoop({
      listener,
      channel: options.notifyChannel ?? '',
      claim: claimRows,
      batchSize: options.batchSize,
      claimed: (rows, _started, ended) => {
        for (const r of rows) starts.add(r.event_payload.n, ended);
      },
      mark: (rows) =>
        markRows(marker, rows).then(() => {
          const done = nowMs();
          for (const r of rows) acks.add(r.event_payload.n, done);
          progress.add(rows.length);
        }),
      pollIntervalMs: options.pollIntervalMs,
      signal,
      ready: () => send({ type: 'ready' }),
    });
    starts.flush();
    acks.flush();
  }
}

runChild(main);
