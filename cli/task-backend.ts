/**
 * The task backend of an outbox the CLI makes. A config declaring `site: 'task'` receivers
 * needs one at `createOutbox`, and the CLI has none to give: a backend is runtime wiring
 * (a started PgBoss, a Redis connection), not declared data. The operator's commands
 * (health, dead, requeue, replay, prune, migrate …) never hand anything off, so they get a
 * backend that refuses if ever asked; `npx outbox relay` serving a lane with a task
 * receiver is refused up front, since it would claim rows it cannot hand to anyone.
 */
import type { OutboxConfig, TaskBackend } from '../src/index.js';
import { ConfigurationError } from '../src/index.js';

/** A backend for a command that hands nothing off; `undefined` when no receiver needs one. */
export function noTaskBackend(config: OutboxConfig, command: string): TaskBackend | undefined {
  if (!config.receivers.some((r) => r.mode === 'durable' && r.site === 'task')) return undefined;
  return {
    name: 'none (the CLI)',
    async enqueue(handOff) {
      throw new Error(
        `npx outbox ${command} has no task backend to hand delivery ${handOff.deliveryId} to`,
      );
    },
    async close() {},
  };
}

/**
 * Refuse a CLI relay that would serve a `site: 'task'` receiver (`lanes` as `servedLanes`
 * returns them: `undefined` is every lane), naming the receiver and the ways out.
 */
export function refuseTaskLanes(config: OutboxConfig, lanes: readonly string[] | undefined): void {
  const served = config.receivers.find(
    (r) =>
      r.mode === 'durable' && r.site === 'task' && (lanes === undefined || lanes.includes(r.lane)),
  );
  if (!served) return;
  throw new ConfigurationError(
    `receivers["${served.key}"] declares site: 'task', and npx outbox relay has no task backend to hand its rows to: run that lane's relay in code (createOutbox(config, { taskBackend }) and outbox.runRelay({ lane: '${served.lane}' })), or leave the lane out here (--exclude-lane ${served.lane}, or declare the receiver in a lane of its own)`,
    { path: 'taskBackend' },
  );
}
