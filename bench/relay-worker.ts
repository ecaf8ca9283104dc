/**
 * One relay in its own process, as it runs in production: its own Node event loop and its
 * own Sequelize pool. Started by `relays.ts`; argv[2] is a {@link RelayWorkerOptions} JSON.
 *
 * It connects, says `ready`, waits for `go`, runs `outbox.runRelay()` until `stop`, and
 * reports `progress` (coalesced, at most once per event-loop turn), `probe` (handler
 * start times) and finally `done` with the relay's report.
 */
import { createOutbox, listenNotifyWakeup, silentLogger } from '../src/index.js';
import { benchConfig, nowMs, openSequelize } from './common.js';
import { useAsyncCommit } from './experiments/async-commit-handlers.js';
import type { ChildMessage, ParentMessage, RelayWorkerOptions } from './protocol.js';

function send(message: ChildMessage): void {
  process.send?.(message);
}

async function main(): Promise<void> {
  const options = JSON.parse(process.argv[2] ?? '{}') as RelayWorkerOptions;
  // Handlers run `concurrency` transactions at once, plus the claim and the record.
  const sequelize = openSequelize(options.concurrency + 2);
  if (options.experiment === 'async-commit-handlers') useAsyncCommit(sequelize);
  // The probe handler's event number by delivery id, to time the acknowledgement too.
  const probed = new Map<string, number>();
  const config = benchConfig(options.kind, (e, deliveryId) => {
    const atMs = nowMs();
    const n = (e.payload as { n: number }).n;
    probed.set(deliveryId, n);
    send({ type: 'probe', n, atMs });
  });
  const outbox = createOutbox(config, {
    sequelize,
    schema: options.schema,
    wakeup: options.notifyChannel ? listenNotifyWakeup({ channel: options.notifyChannel }) : null,
    logger: silentLogger,
  });

  let delivered = 0;
  let progressQueued = false;
  outbox.on('relay:delivered', (d) => {
    delivered += 1;
    const n = probed.get(d.deliveryId);
    if (n !== undefined) {
      probed.delete(d.deliveryId);
      send({ type: 'delivered', n, atMs: nowMs() });
    }
    if (!progressQueued) {
      progressQueued = true;
      setImmediate(() => {
        progressQueued = false;
        send({ type: 'progress', delivered, atMs: nowMs() });
      });
    }
  });

  // Open a pooled connection before `ready`, so the timed part does not pay for it.
  await sequelize.authenticate();

  const stop = new AbortController();
  const go = new Promise<void>((resolve) => {
    process.on('message', (message: ParentMessage) => {
      if (message.type === 'go') resolve();
      if (message.type === 'stop') {
        stop.abort();
        resolve();
      }
    });
  });
  process.on('disconnect', () => stop.abort());

  if (!options.startAtOnce) {
    send({ type: 'ready' });
    await go;
  }
  const running = outbox.runRelay({
    signal: stop.signal,
    workerId: options.workerId,
    batchSize: options.batchSize,
    concurrency: options.concurrency,
    pollIntervalMs: options.pollIntervalMs,
  });
  if (options.startAtOnce) send({ type: 'ready' });
  const report = await running;
  send({ type: 'done', report: { ...report }, delivered });
  await outbox.close();
  await sequelize.close();
}

main().then(
  () => {
    process.disconnect?.();
  },
  (error: unknown) => {
    send({
      type: 'error',
      message: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
    process.exitCode = 1;
    process.disconnect?.();
  },
);
