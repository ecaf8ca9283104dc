/**
 * The dead letters that hold rows back: what `outbox health` names so a row behind a dead
 * letter of its ordering key is explained, not only seen ageing. A delivery whose ordering
 * key has an earlier row still owed or dead is never claimed (the claim's `notHeldBack`);
 * once that earlier row is dead, only a person (requeue-dead, cancel) lets the key move.
 *
 * Read-only, outside any transaction, over live rows only: the dead rows (the partial index
 * of dead letters) and, per dead letter with an ordering key, one probe of the ordering
 * index (receiver, target, ordering key, event) for the owed rows behind it — never the
 * history, so its cost follows the dead letters, not what the table ever held.
 */
import type { Sequelize } from 'sequelize';
import type { DialectEntry } from '../storage/dialect-entry.js';
import type { SqlDialect } from '../storage/sql/dialect.js';
import type { TableNames } from '../storage/tables.js';
import { unscopedKey } from '../storage/tenant-keys.js';

/** A dead letter with owed rows of its ordering key behind it. */
export interface HoldingDeadLetter {
  /** The dead row's id, as `outbox dead` lists it and `requeue-dead --id` takes it. */
  readonly deliveryId: string;
  readonly receiverKey: string;
  /** The fan-out target, or null for a plain receiver. */
  readonly target: string | null;
  readonly orderingKey: string;
  /** The dead row's event's tenant (its ordering key is that tenant's); absent without one. */
  readonly tenant?: string;
  /** The dead row's event (its UUID). */
  readonly eventId: string;
  /** How many owed rows of the key wait behind it, counted to {@link HELD_BACK_COUNT_CAP}. */
  readonly heldBack: number;
}

/** At most this many dead letters are named (the oldest first). */
export const HOLDING_LIMIT = 20;
/** The count of rows behind one dead letter stops here (`heldBack` is then "at least"). */
export const HELD_BACK_COUNT_CAP = 1000;

/**
 * The dead letters with an ordering key and at least one owed row of the same receiver,
 * target and key behind them (a later event), oldest event first, at most `$1`; each with
 * its event's uuid and the owed rows behind it counted up to `$2`.
 *
 * Reads the dead rows by the dead-letter partial index (`phase.dead`), the event by primary
 * key, and the rows behind through the ordering index (`ordering_key IS NOT NULL AND
 * holdsBack`, stated word for word so the planner can use the partial index).
 */
export function holdingDeadLettersSql(t: TableNames, d: SqlDialect): string {
  const behind = (select: string) => `
          SELECT ${select} FROM ${t.deliveries} h
          WHERE h.receiver_key = x.receiver_key AND h.target = x.target
            AND h.ordering_key = x.ordering_key AND h.event_id > x.event_id
            AND h.ordering_key IS NOT NULL AND ${d.ddl.phase.holdsBack('h')}
            AND ${d.ddl.phase.owed('h')}`;
  return `
    SELECT x.id AS delivery_id, x.receiver_key, x.target, x.ordering_key,
           (SELECT e.uuid FROM ${t.events} e WHERE e.id = x.event_id) AS event_uuid,
           (SELECT e.tenant FROM ${t.events} e WHERE e.id = x.event_id) AS event_tenant,
           ${d.countUpTo(behind('1'), d.param(2, 'integer'))} AS held_back
    FROM ${t.deliveries} x
    WHERE ${d.ddl.phase.dead('x')} AND x.ordering_key IS NOT NULL
      AND EXISTS (${behind('1')})
    ORDER BY x.event_id
    LIMIT ${d.param(1, 'integer')}`;
}

/** Read the dead letters that hold rows back (see the module comment). */
export async function readHoldingDeadLetters(
  sequelize: Sequelize,
  tables: TableNames,
  entry: DialectEntry,
  limit = HOLDING_LIMIT,
): Promise<HoldingDeadLetter[]> {
  // Through the dialect's runner, which spells the quoted names its way (MariaDB).
  const rows = await entry.runner(sequelize).select<{
    delivery_id: string | number;
    receiver_key: string;
    target: string | null;
    ordering_key: string;
    event_uuid: string;
    event_tenant: string | null;
    held_back: string | number;
  }>(holdingDeadLettersSql(tables, entry.sql), [limit, HELD_BACK_COUNT_CAP]);
  return rows.map((r) => ({
    deliveryId: String(r.delivery_id),
    receiverKey: r.receiver_key,
    target: r.target === '' ? null : r.target,
    orderingKey: unscopedKey(r.event_tenant ?? null, r.ordering_key) ?? r.ordering_key,
    ...(r.event_tenant ? { tenant: r.event_tenant } : {}),
    eventId: r.event_uuid,
    heldBack: Number(r.held_back),
  }));
}
