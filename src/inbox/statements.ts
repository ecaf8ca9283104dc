/**
 * The inbox's statements, one per operation, written once for both dialects through the
 * {@link SqlDialect}'s parameter spelling (PostgreSQL `$1::text`, SQLite `$1`).
 */
import type { SqlDialect } from '../storage/sql/dialect.js';
import type { InboxTables } from './tables.js';

export interface InboxStatements {
  /**
   * Record a message as received. Params: $1 consumer, $2 event id, $3 topic (or NULL),
   * $4 received_at. Changes 1 row when the message is new, 0 when the (consumer, event id)
   * is already there. On PostgreSQL a row inserted by a transaction still open makes this
   * WAIT for it (the primary key's speculative insertion): its commit turns this into 0
   * rows, its rollback into 1. That wait is what lets exactly one of two concurrent
   * redeliveries process the message. Reads the primary key.
   */
  readonly receive: string;
  /**
   * Mark a received message processed, after the work. Params: $1 consumer, $2 event id,
   * $3 processed_at. Reads the primary key.
   */
  readonly processed: string;
  /**
   * Delete up to a batch of a consumer's oldest rows received before a moment. Params:
   * $1 consumer, $2 the cutoff (received_at strictly before it), $3 the batch size.
   * Returns the number deleted. Reads `inbox_received` (consumer, received_at). The batch
   * is a derived table (`x`): MariaDB takes no LIMIT in an IN subquery, nor a subquery of
   * the table a DELETE deletes from, but does take a derived one.
   */
  readonly prune: string;
}

export function inboxStatements(t: InboxTables, d: SqlDialect): InboxStatements {
  const p = d.param;
  return {
    receive: d.insertSkippingDuplicates(
      `INSERT INTO ${t.inbox} (consumer, event_id, topic, received_at)
      VALUES (${p(1, 'text')}, ${p(2, 'text')}, ${p(3, 'text')}, ${p(4, 'timestamp')})`,
      ['consumer', 'event_id'],
    ),
    processed: `UPDATE ${t.inbox} SET processed_at = ${p(3, 'timestamp')}
      WHERE consumer = ${p(1, 'text')} AND event_id = ${p(2, 'text')}`,
    prune: `DELETE FROM ${t.inbox}
      WHERE consumer = ${p(1, 'text')} AND event_id IN (SELECT x.event_id FROM (
        SELECT event_id FROM ${t.inbox}
        WHERE consumer = ${p(1, 'text')} AND received_at < ${p(2, 'timestamp')}
        ORDER BY received_at LIMIT ${p(3, 'integer')}) AS x)`,
  };
}
