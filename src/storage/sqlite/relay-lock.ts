import { toDate } from '../rows.js';
import type { SqlDialect, SqlRunner } from '../sql/dialect.js';
import type { RelayLockHolder, SingleWriterLock } from '../store.js';
import type { TableNames } from '../tables.js';

/**
 * SQLite's single-relay lock: one leased row (id 1) in the relay-lock table. A relay
 * renews it while it runs; one killed with -9 holds it only until its lease lapses.
 */
export class SqliteRelayLock implements SingleWriterLock {
  constructor(
    private readonly runner: SqlRunner,
    private readonly t: TableNames,
    private readonly d: SqlDialect,
  ) {}

  /**
   * Take the lock for $1 until $3, or renew it; refused while another holder's lease is
   * live at $2. Returns the holder's row when $1 now holds it. Reads the primary key.
   */
  async acquire(holder: string, now: Date, until: Date): Promise<boolean> {
    const l = this.t.relayLock;
    const rows = await this.runner.select(
      `INSERT INTO ${l} (id, holder, lease_until) VALUES (1, $1, $3)
       ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until
       WHERE ${l}.holder = excluded.holder OR ${l}.lease_until <= $2
       RETURNING holder`,
      [holder, this.d.value(now, 'timestamp'), this.d.value(until, 'timestamp')],
    );
    return rows.length === 1;
  }

  /**
   * Who holds the lock and until when, or undefined if nobody does. A lease in the past
   * has lapsed: the next `acquire` takes it over.
   */
  async current(): Promise<RelayLockHolder | undefined> {
    const [row] = await this.runner.select<{ holder: string; lease_until: unknown }>(
      `SELECT holder, lease_until FROM ${this.t.relayLock} WHERE id = 1`,
      [],
    );
    return row ? { holder: row.holder, leaseUntil: toDate(row.lease_until) } : undefined;
  }

  /** Give the lock up; only the holder $1's row is deleted. */
  async release(holder: string): Promise<void> {
    await this.runner.run(`DELETE FROM ${this.t.relayLock} WHERE holder = $1`, [holder]);
  }
}
