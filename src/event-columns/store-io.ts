/**
 * The event columns on the way out of the store, for the claim and the reads of stored
 * events, and the "run migrate" message of a statement that failed on them (fire's insert,
 * which writes the columns in the event's own row, asks it too). Each is skipped outright
 * by an outbox that declares no column, so their statements and costs are only an
 * event-column outbox's.
 */
import { ConfigurationError } from '../errors/outbox-error.js';
import type { Runtime } from '../runtime.js';
import type { StoredEvent } from '../storage/store.js';
import { eventColumnPlan } from './migrate.js';
import { readColumns } from './values.js';

/**
 * Say "run `npx outbox migrate`" for a failed statement on the event columns when a
 * declared column is missing from the table (read again, on another connection: the failed
 * one may be in an aborted transaction); any other error as it is. Asked only once the
 * statement has failed.
 */
export async function columnsError(rt: Runtime, where: string, error: unknown): Promise<unknown> {
  let missing: string[];
  try {
    missing = (await eventColumnPlan(rt)).add.map((c) => c.name);
  } catch {
    return error;
  }
  if (missing.length === 0) return error;
  return new ConfigurationError(
    `${where}: ${rt.tables.events} has no column ${missing.join(', ')}, which defineOutbox({ eventColumns }) declares. Run \`npx outbox migrate\` (or \`await outbox.migrate()\`) first (${rt.dialect.title}: ${(error as Error).message})`,
    { path: 'migrate', cause: error },
  );
}

/**
 * The stored events with their declared columns (`columns`), read in one statement by
 * sequence; the events as they are where the outbox declares none.
 * @throws {ConfigurationError} when a declared column is missing (run migrate).
 */
export async function withColumns<E extends StoredEvent>(
  rt: Runtime,
  events: readonly E[],
  where: string,
  transaction?: Parameters<Runtime['store']['readEventColumns']>[2],
): Promise<E[]> {
  const declared = rt.config.eventColumns;
  if (declared.length === 0 || events.length === 0) return [...events];
  let rows: Map<string, Record<string, unknown>>;
  try {
    rows = await rt.store.readEventColumns(
      [...new Set(events.map((e) => e.sequence))],
      declared,
      transaction,
    );
  } catch (error) {
    throw await columnsError(rt, where, error);
  }
  return events.map((e) => ({ ...e, columns: readColumns(declared, rows.get(e.sequence)) }));
}
