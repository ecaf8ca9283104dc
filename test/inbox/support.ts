import type { Sequelize, Transaction } from 'sequelize';
import { type InboxOptions, inbox } from '../../src/index.js';
import type { TestDatabase } from '../../testing/databases.js';
import { tableName } from '../relay/support.js';
import { sqlOf } from '../support/dialects.js';

let tables = 0;

/**
 * A consumer on a test database: an inbox with tables of its own (a fresh prefix, the
 * file's schema on PostgreSQL), migrated, and the consumer's own work table, deliberately
 * WITHOUT a unique key, so a message processed twice shows as two rows rather than as a
 * constraint error.
 */
export async function openConsumer(
  db: TestDatabase,
  options: InboxOptions & { sequelize?: Sequelize; prefix?: string } = {},
) {
  tables += 1;
  const prefix = options.prefix ?? `i${tables}_`;
  const sequelize = options.sequelize ?? db.sequelize;
  const box = inbox(sequelize, {
    schema: db.outboxOptions.schema,
    tablePrefix: prefix,
    ...options,
  });
  await box.migrate();
  const work = tableName(db, `${prefix}work`);
  await sqlOf(db.sequelize).run(
    `CREATE TABLE IF NOT EXISTS ${work} (event_id varchar(255) NOT NULL, label varchar(255))`,
    [],
  );
  const inboxTable = tableName(db, `${prefix}inbox`);
  return {
    inbox: box,
    prefix,
    inboxTable,
    /** The consumer's own work: one row per message processed. */
    async record(transaction: Transaction, eventId: string, label = 'done', on = sequelize) {
      await sqlOf(on).run(
        `INSERT INTO ${work} (event_id, label) VALUES ($1, $2)`,
        [eventId, label],
        transaction,
      );
    },
    /** The work rows, as [event_id, label], in insertion order. */
    async work(): Promise<[string, string][]> {
      const rows = await sqlOf(db.sequelize).select<{ event_id: string; label: string }>(
        `SELECT event_id, label FROM ${work} ORDER BY event_id, label`,
        [],
      );
      return rows.map((r) => [r.event_id, r.label]);
    },
    /** The inbox rows, as the table holds them. */
    async rows(): Promise<
      {
        consumer: string;
        event_id: string;
        topic: string | null;
        received_at: unknown;
        processed_at: unknown;
      }[]
    > {
      return sqlOf(db.sequelize).select<never>(
        `SELECT consumer, event_id, topic, received_at, processed_at FROM ${inboxTable} ORDER BY consumer, event_id`,
        [],
      );
    },
  };
}

/** A timestamp column's value as epoch milliseconds, whichever dialect stored it. */
export function epochMs(value: unknown): number {
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  throw new Error(`not a timestamp: ${String(value)}`);
}
