import { QueryTypes, type Sequelize, type Transaction } from 'sequelize';
import type { Row } from '../rows.js';
import type { SqlRunner } from '../sql/dialect.js';

/** Statements through Sequelize on PostgreSQL: row counts from the driver's rowCount. */
export function postgresRunner(sequelize: Sequelize): SqlRunner {
  return {
    select<T = Row>(sql: string, bind: unknown[], transaction?: Transaction | null) {
      return sequelize.query(sql, {
        bind,
        type: QueryTypes.SELECT,
        transaction: transaction ?? null,
        raw: true,
      }) as Promise<T[]>;
    },
    async exec(sql, bind, transaction) {
      const [, meta] = (await sequelize.query(sql, {
        bind,
        transaction: transaction ?? null,
        raw: true,
      })) as [unknown, { rowCount?: number } | number];
      // Sequelize hands an INSERT's row count over as a number, anything else's in the
      // driver's result.
      return typeof meta === 'number' ? meta : (meta?.rowCount ?? 0);
    },
    async run(sql, bind, transaction) {
      await sequelize.query(sql, { bind, transaction: transaction ?? null, raw: true });
    },
  };
}
