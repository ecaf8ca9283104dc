import type { Sequelize } from 'sequelize';
import type { Outbox } from '../../src/index.js';
import { type Claim, claimBatch } from '../../src/relay/claim.js';
import { runtimeOf } from '../../src/runtime.js';
import type { DeliveryRow } from '../../src/storage/store.js';
import { deliveryRows, waitFor } from '../relay/support.js';

/** Claim the owed rows (of these receivers), through the relay's own claim step. */
export function claimRows(
  outbox: Outbox,
  options: { receiverKeys?: readonly string[]; now?: Date } = {},
): Promise<Claim> {
  const rt = runtimeOf(outbox);
  return claimBatch(rt, {
    workerId: 'test-worker',
    now: options.now ?? rt.clock(),
    limit: 100,
    receiverKeys: options.receiverKeys,
  });
}

/** Every delivery row by receiver key and target (`key` or `key→target`), for assertions. */
export async function rowsByKey(outbox: Outbox): Promise<Record<string, DeliveryRow>> {
  const rows = await deliveryRows(outbox);
  return Object.fromEntries(
    rows.map((r) => [`${r.eventSequence}:${r.receiverKey}${r.target ? `→${r.target}` : ''}`, r]),
  );
}

/** The statuses of every delivery row, `eventSequence:key[→target]: status`, sorted. */
export async function statuses(outbox: Outbox): Promise<Record<string, string>> {
  return Object.fromEntries(Object.entries(await rowsByKey(outbox)).map(([k, r]) => [k, r.status]));
}

/**
 * PostgreSQL: wait until a statement on the tables of `schema` is waiting for a lock (a
 * row lock another transaction holds), read from `pg_stat_activity`. Returns the texts of
 * the statements waiting.
 */
export async function waitUntilBlocked(sequelize: Sequelize, schema: string): Promise<string[]> {
  let waiting: string[] = [];
  await waitFor(async () => {
    const [rows] = (await sequelize.query(
      `SELECT query FROM pg_stat_activity
       WHERE wait_event_type = 'Lock' AND state = 'active' AND position($1 in query) > 0`,
      { bind: [`"${schema}".`] },
    )) as [{ query: string }[], unknown];
    waiting = rows.map((r) => r.query);
    return waiting.length > 0;
  }, `a statement on schema ${schema} to wait for a lock`);
  return waiting;
}

/** Whether a promise has settled yet (after letting pending I/O run a little). */
export async function settled(promise: Promise<unknown>, ms = 150): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((resolve) => setTimeout(resolve, ms));
  return done;
}
