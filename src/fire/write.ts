import type { Transaction } from 'sequelize';
import { decodeEvent } from '../codec/decode-event.js';
import type { Runtime } from '../runtime.js';
import type { FiredEvent, PlannedEvent } from './types.js';

/**
 * Step 3 of `fire()`: write the events and their delivery rows in one store call, and
 * return what each call fired, in the order given.
 *
 * For an idempotency key already stored (or given twice), the store writes nothing and the
 * stored event is read back in the same transaction and decoded by THE decoder, so a
 * stored payload its schema no longer accepts raises the same `PayloadDecodeError` here as
 * in the relay and `assertFired`.
 *
 * @throws {PayloadDecodeError} for a duplicate whose stored event no longer decodes.
 */
export async function writeEvents(
  rt: Runtime,
  planned: readonly PlannedEvent[],
  transaction: Transaction,
): Promise<FiredEvent[]> {
  if (planned.length === 0) return [];
  const written = await rt.store.insertEvents(
    planned.map((p) => ({ ...p.row, deliveries: p.deliveries })),
    transaction,
  );
  const duplicates = written.filter((w) => !w.inserted).map((w) => w.sequence);
  const stored =
    duplicates.length === 0
      ? new Map()
      : new Map(
          (await rt.store.readEvents({ sequences: duplicates }, transaction)).map((e) => [
            e.sequence,
            e,
          ]),
        );
  return planned.map((p, i): FiredEvent => {
    const w = written[i];
    if (w.inserted) {
      return {
        id: w.uuid,
        sequence: w.sequence,
        name: p.row.name,
        version: p.row.version,
        payload: p.payload,
        headers: p.headers,
        orderingKey: p.row.orderingKey,
        idempotencyKey: p.row.idempotencyKey,
        occurredAt: p.row.occurredAt,
        recordedAt: p.row.recordedAt,
        duplicate: false,
      };
    }
    const e = stored.get(w.sequence);
    if (!e) throw new Error(`stored event ${w.sequence} vanished while firing`);
    return { ...decodeEvent(rt.config, e), duplicate: true };
  });
}
