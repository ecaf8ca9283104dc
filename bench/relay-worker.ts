/**
 * One relay in its own process, as it runs in production: its own Node event loop and its
 * own Sequelize pool. Started by `relays.ts`; argv[2] is a {@link RelayWorkerOptions} JSON.
 *
 * It connects, says `ready`, waits for `go`, runs `outbox.runRelay()` until `stop`, and
 * reports `progress` (coalesced, at most once per event-loop turn), `probes` (handler
 * start and acknowledgement times, coalesced the same way) and finally `done` with the
 * relay's report.
 */
import { createOutbox, silentLogger } from '../src/index.js';
import {
  cpuReport,
  parentOrders,
  probeReporter,
  progressReporter,
  runChild,
  send,
} from './child.js';
import { benchConfig, isHandlerKind, nowMs, openSequelize } from './common.js';
import { useAsyncCommit } from './experiments/async-commit-handlers.js';
import type { RelayWorkerOptions } from './protocol.js';
import { benchWakeup } from './wakeups.js';

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2] ?? '{}') as RelayWorkerOptions;
  // Handlers run `concurrency` transactions at once, plus the claim and the record.
  const sequelize = openSequelize(options.concurrency + 2);
  if (options.experiment === 'async-commit-handlers') useAsyncCommit(sequelize);
  const starts = probeReporter();
  const acks = probeReporter(true);
  // The probe handler's event number by delivery id, to time the acknowledgement too.
  const probed = new Map<string, number>();
  const config = benchConfig(options.kind, (e, deliveryId) => {
    const atMs = nowMs();
    const n = (e.payload as { n: number }).n;
    probed.set(deliveryId, n);
    starts.add(n, atMs);
  });
  const outbox = createOutbox(config, {
    sequelize,
    schema: options.schema,
    wakeup: options.notifyChannel
      ? benchWakeup(options.wakeup ?? 'listen-notify', options.notifyChannel)
      : null,
    logger: silentLogger,
  });

  const progress = progressReporter(nowMs);
  if (isHandlerKind(options.kind)) {
    // A handler's delivery is told when it commits (and probed: its acknowledgement time).
    outbox.on('relay:delivered', (d) => {
      const n = probed.get(d.deliveryId);
      if (n !== undefined) {
        probed.delete(d.deliveryId);
        acks.add(n, nowMs());
      }
      progress.add(1);
    });
  } else {
    // A transport's batch is counted once, when its record is written, as the bare loop
    // counts its mark: a listener of `relay:delivered` would make the relay build and emit
    // one event per delivery, which a relay nobody observes per delivery does not.
    outbox.on('relay:recorded', (r) => progress.add(r.rows));
  }

  // Open a pooled connection before `ready`, so the timed part does not pay for it.
  await sequelize.authenticate();
  if (options.warmupSchema) {
    // Warm up before `ready` (see DrainOptions.warmupEvents): the same relay code drains a
    // backlog of its own, untimed, on the same pool, as a relay in service is warm.
    const warm = createOutbox(config, {
      sequelize,
      schema: options.warmupSchema,
      wakeup: null,
      logger: silentLogger,
    });
    await warm.runRelay({
      untilIdle: true,
      workerId: `${options.workerId}-warmup`,
      batchSize: options.batchSize,
      concurrency: options.concurrency,
    });
    await warm.close();
  }

  const { go, stopped } = parentOrders();
  if (!options.startAtOnce) {
    send({ type: 'ready' });
    await go;
  }
  const running = outbox.runRelay({
    signal: stopped,
    workerId: options.workerId,
    batchSize: options.batchSize,
    concurrency: options.concurrency,
    pollIntervalMs: options.pollIntervalMs,
  });
  if (options.startAtOnce) send({ type: 'ready' });
  const report = await running;
  starts.flush();
  acks.flush();
  send({
    type: 'done',
    report: { ...report, ...cpuReport() },
    delivered: progress.delivered,
  });
  await outbox.close();
  await sequelize.close();
}

runChild(main);
