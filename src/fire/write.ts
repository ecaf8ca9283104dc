import type { Transaction } from 'sequelize';
import { decodeEvent } from '../codec/decode-event.js';
import { columnsError, withColumns } from '../event-columns/store-io.js';
import type { Runtime } from '../runtime.js';
import type { InsertOptions, StoredEvent, WrittenEvent } from '../storage/store.js';
import { firingEventOf } from './event-view.js';
import type { FiredEvent, PlannedEvent } from './types.js';

/**
 * Step 3 of `fire()`: write the events and their delivery rows in one store call, and
 * return what each call fired, in the order given. An event's own columns
 * (`defineOutbox({ eventColumns })`) are written in its row by that same insert
 * (`row.columnValues`), never by a second statement.
 *
 * For an idempotency key already stored (or given twice), the store writes nothing and the
 * stored event is read back in the same transaction and decoded by THE decoder, so a
 * stored payload its schema no longer accepts raises the same `PayloadDecodeError` here as
 * in the relay and `assertFired`.
 *
 * A suppressed event is written with its reason and NO delivery row, whatever planning
 * produced; one discarded by `suppressed(…, { record: false })` is not written at all and
 * comes back with `recorded: false` and a blank `id` and `sequence`.
 *
 * @throws {PayloadDecodeError} for a duplicate whose stored event no longer decodes.
 */
export async function writeEvents(
  rt: Runtime,
  planned: readonly PlannedEvent[],
  transaction: Transaction,
): Promise<FiredEvent[]> {
  if (planned.length === 0) return [];
  return firedEventsOf(rt, planned, await insertPlanned(rt, planned, transaction));
}

/** What the store answered for a call's events: its rows, and the stored repeats. */
export interface Inserted {
  /** One per event written (suppressed `record: false` ones are not), in order. */
  readonly written: readonly WrittenEvent[];
  /** The stored events of the repeated idempotency keys, by sequence. */
  readonly stored: ReadonlyMap<string, StoredEvent>;
}

/**
 * The store call of {@link writeEvents}, without building what the call fired: change
 * capture, which returns nothing, builds the `FiredEvent`s only for receivers that run in
 * the process (src/fire/fire.ts, `fireUnanswered`).
 */
export async function insertPlanned(
  rt: Runtime,
  planned: readonly PlannedEvent[],
  transaction: Transaction,
  options?: InsertOptions,
): Promise<Inserted> {
  const kept = planned.filter((p) => p.suppression?.record !== false);
  let written: readonly WrittenEvent[] = [];
  if (kept.length > 0) {
    try {
      // Each event's own columns (`row.columnValues`) go into its INSERT; a repeated
      // idempotency key writes nothing and keeps the stored event's.
      written = await rt.store.insertEvents(
        kept.map((p) => ({ ...p.row, deliveries: p.suppression ? [] : p.deliveries })),
        transaction,
        options,
      );
    } catch (error) {
      // Asked only once the insert failed: a declared column missing from the table says
      // "run migrate"; a missing table is fire()'s own message (outboxWriteError).
      throw rt.config.eventColumns.length > 0 && !rt.dialect.missingTable(error)
        ? await columnsError(rt, 'fire()', error)
        : error;
    }
  }
  const duplicates = written.filter((w) => !w.inserted).map((w) => w.sequence);
  const stored =
    duplicates.length === 0
      ? new Map<string, StoredEvent>()
      : new Map(
          (
            await withColumns(
              rt,
              await rt.store.readEvents({ sequences: duplicates }, transaction),
              'fire()',
              transaction,
            )
          ).map((e) => [e.sequence, e]),
        );
  return { written, stored };
}

/** What each event of the call fired, in the order given (see {@link writeEvents}). */
export function firedEventsOf(
  rt: Runtime,
  planned: readonly PlannedEvent[],
  { written, stored }: Inserted,
): FiredEvent[] {
  let next = 0;
  return planned.map((p): FiredEvent => {
    if (p.suppression?.record === false) {
      return {
        ...asFired(p),
        id: '',
        sequence: '',
        correlationId: p.row.correlationId === p.row.uuid ? null : p.row.correlationId,
        suppressed: p.suppression.reason,
        recorded: false,
      };
    }
    const w = written[next++];
    if (w.inserted) return { ...asFired(p), id: w.uuid, sequence: w.sequence };
    const e = stored.get(w.sequence);
    if (!e) throw new Error(`stored event ${w.sequence} vanished while firing`);
    return { ...decodeEvent(rt.config, e), duplicate: true, suppressed: null, recorded: true };
  });
}

/** The event this call wrote, as its receivers see it (before the store named it). */
function asFired(p: PlannedEvent): FiredEvent {
  return {
    ...firingEventOf(p),
    sequence: '',
    duplicate: false,
    suppressed: p.suppression?.reason ?? null,
    recorded: true,
  };
}
