/**
 * What capture asks of a dialect, as data: the ONE place src/capture/ learns what the
 * database it writes to can do — from the dialect registry's entry
 * (src/storage/dialects.ts), never from the dialect's name. Each field decides a way of
 * capturing a write kind.
 */
import type { Sequelize } from 'sequelize';
import { dialectSupports } from '../sequelize/internals.js';
import { dialectOf } from '../storage/dialects.js';

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

/**
 * The capture capabilities of the dialect `sequelize` talks: its registry entry's, and for
 * RETURNING also Sequelize's own (6.37's SQLite dialect writes no RETURNING for an UPDATE
 * although SQLite 3.35 takes one, so its rows would never come back).
 *
 * @throws {ConfigurationError} for a dialect the registry has no entry for.
 */
export function captureCapabilities(sequelize: Sequelize): CaptureCapabilities {
  const database = dialectOf(sequelize, { who: 'installCapture' }).capabilities;
  const handsBack = Boolean(dialectSupports(sequelize).returnValues);
  return {
    returningOnUpdate: database.returning.update && handsBack,
    rowLocks: database.rowLocks,
    upsertUpdatedSql: database.upsertUpdatedSql,
    singleWriter: database.singleWriter,
  };
}
