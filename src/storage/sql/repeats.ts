/**
 * The idempotency tail of `insertEvents`, written once: an input whose idempotency key
 * already existed wrote nothing (ON CONFLICT DO NOTHING, so the caller's transaction is
 * never aborted); find the stored event of each such key and answer every input in order.
 */
import type { Transaction } from 'sequelize';
import type { EventRowInput, WrittenEvent } from '../store.js';
import type { SqlDialect, SqlRunner } from './dialect.js';

/**
 * Answer each input: `written` maps the uuids the insert wrote to their sequences; the
 * rest are looked up by idempotency key with `repeatsSql` (`SharedStatements.repeats`).
 * @throws when an input was neither written nor found (it has no key: a bug, never a repeat).
 */
export async function withRepeats(
  events: readonly EventRowInput[],
  written: ReadonlyMap<string, string>,
  lookup: { runner: SqlRunner; dialect: SqlDialect; repeatsSql: string },
  transaction: Transaction,
): Promise<WrittenEvent[]> {
  const missing = events
    .filter((e) => !written.has(e.uuid) && e.idempotencyKey !== null)
    .map((e) => e.idempotencyKey as string);
  const stored = new Map<string, { sequence: string; uuid: string }>();
  if (missing.length > 0) {
    const rows = await lookup.runner.select<{
      sequence: unknown;
      uuid: unknown;
      idempotency_key: string;
    }>(lookup.repeatsSql, [lookup.dialect.list(missing, 'text')], transaction);
    for (const r of rows)
      stored.set(r.idempotency_key, { sequence: String(r.sequence), uuid: String(r.uuid) });
  }
  return events.map((e) => {
    const sequence = written.get(e.uuid);
    if (sequence !== undefined) return { sequence, uuid: e.uuid, inserted: true };
    const repeat = e.idempotencyKey === null ? undefined : stored.get(e.idempotencyKey);
    if (!repeat)
      throw new Error(`event ${e.uuid} was neither written nor found by its idempotency key`);
    return { ...repeat, inserted: false };
  });
}
