/**
 * What capture asks of a dialect, as data: the ONE place src/capture/ learns which
 * database it writes to. Each field decides a way of capturing a write kind, never a
 * dialect's name.
 */
import type { Sequelize } from 'sequelize';

export interface CaptureCapabilities {
  /**
   * A static `update`, a soft `destroy`, `restore` and `increment` may run with
   * `returning: true` and take the rows they wrote from RETURNING (no read after): the
   * database's UPDATE takes a RETURNING clause **and** Sequelize's dialect hands its rows
   * back. Where not, the rows are read first and re-read by key.
   */
  readonly returningOnUpdate: boolean;
  /** `SELECT … FOR UPDATE`: the rows read before a write are locked until it commits. */
  readonly rowLocks: boolean;
  /**
   * The SQL of a boolean a `SELECT` of a row an upsert just wrote reads to tell that ON
   * CONFLICT updated it (PostgreSQL: `xmax <> 0`); null where the row cannot tell — the
   * upsert's rows are then read before it, and the outcome is whether they existed.
   */
  readonly upsertUpdatedSql: string | null;
  /**
   * One writing transaction at a time (SQLite): the transactions capture opens for writes
   * started together are queued, not left to fail on the busy lock.
   */
  readonly singleWriter: boolean;
}

const POSTGRES: CaptureCapabilities = Object.freeze({
  returningOnUpdate: true,
  rowLocks: true,
  upsertUpdatedSql: `("xmax"::text <> '0')`,
  singleWriter: false,
});
const SQLITE: CaptureCapabilities = Object.freeze({
  returningOnUpdate: false,
  rowLocks: false,
  upsertUpdatedSql: null,
  singleWriter: true,
});

/**
 * The capture capabilities of the dialect `sequelize` talks. TEMPORARY: decided here by
 * the dialect's name until the dialect registry (src/storage/dialects.ts) is committed;
 * then read from its entry's capabilities.
 */
export function captureCapabilities(sequelize: Sequelize): CaptureCapabilities {
  return sequelize.getDialect() === 'postgres' ? POSTGRES : SQLITE;
}
