/**
 * The transient-error table (src/relay/transient.ts) against the errors real servers raise:
 * a deadlock and a lock wait that timed out are passing faults on every dialect that has
 * them, so the relay hands a handler's row back uncharged instead of spending an attempt.
 * Each error is provoked for real, through Sequelize, as the relay would meet it.
 */
import { QueryTypes, type Sequelize, type Transaction } from 'sequelize';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isTransientDatabaseError } from '../../src/relay/transient.js';
import type { TestDatabase } from '../../testing/databases.js';
import { describeEachDialect, isMariadb } from '../support/dialects.js';

describeEachDialect('transient database errors', (dialect) => {
  const servers = dialect.name !== 'sqlite';
  let db: TestDatabase;
  let other: Sequelize;
  const q = (s: string) => (isMariadb(dialect.name) ? s.replaceAll('"', '`') : s);
  /** A table of the test's own, in its schema where it has one. */
  let table = '';
  let duplicates = '';
  const run = (s: Sequelize, sql: string, transaction?: Transaction) =>
    s.query(q(sql), { transaction, type: QueryTypes.UPDATE });

  beforeAll(async () => {
    db = await dialect.open();
    other = db.connectAgain();
    const schema = db.outboxOptions.schema;
    const name = (n: string) => (schema ? `${schema}"."${n}` : n);
    table = name('transient_probe');
    duplicates = name('dup_probe');
    if (!servers) return;
    await db.sequelize.query(q(`CREATE TABLE "${table}" (id INT PRIMARY KEY, n INT)`), {
      type: QueryTypes.RAW,
    });
    await db.sequelize.query(q(`INSERT INTO "${table}" (id, n) VALUES (1, 0), (2, 0)`), {
      type: QueryTypes.INSERT,
    });
  });
  afterAll(async () => {
    await other?.close();
    await db.cleanup();
  });

  it.runIf(servers)('a deadlock is a passing fault', async () => {
    const a = await db.sequelize.transaction();
    const b = await other.transaction();
    try {
      await run(db.sequelize, `UPDATE "${table}" SET n = n + 1 WHERE id = 1`, a);
      await run(other, `UPDATE "${table}" SET n = n + 1 WHERE id = 2`, b);
      // Each now waits for the other's row: the server picks one of them to fail.
      const outcomes = await Promise.allSettled([
        run(db.sequelize, `UPDATE "${table}" SET n = n + 1 WHERE id = 2`, a),
        run(other, `UPDATE "${table}" SET n = n + 1 WHERE id = 1`, b),
      ]);
      const failed = outcomes.filter((o) => o.status === 'rejected');
      expect(failed).toHaveLength(1);
      expect(isTransientDatabaseError((failed[0] as PromiseRejectedResult).reason)).toBe(true);
    } finally {
      await Promise.allSettled([a.rollback(), b.rollback()]);
    }
  });

  it.runIf(isMariadb(dialect.name))('a lock wait that timed out is a passing fault', async () => {
    const a = await db.sequelize.transaction();
    const b = await other.transaction();
    try {
      await run(db.sequelize, `UPDATE "${table}" SET n = n + 1 WHERE id = 1`, a);
      await other.query('SET SESSION innodb_lock_wait_timeout = 1', {
        transaction: b,
        type: QueryTypes.RAW,
      });
      const waited = await run(other, `UPDATE "${table}" SET n = n + 1 WHERE id = 1`, b).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(waited).toBeDefined();
      expect(isTransientDatabaseError(waited)).toBe(true);
    } finally {
      await Promise.allSettled([a.rollback(), b.rollback()]);
    }
  });

  it('a constraint violation is not', async () => {
    const duplicate = await db.sequelize
      .query(q(`CREATE TABLE "${duplicates}" (id INT PRIMARY KEY)`), { type: QueryTypes.RAW })
      .then(() =>
        db.sequelize.query(q(`INSERT INTO "${duplicates}" (id) VALUES (1), (1)`), {
          type: QueryTypes.INSERT,
        }),
      )
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(duplicate).toBeDefined();
    expect(isTransientDatabaseError(duplicate)).toBe(false);
  });
});
