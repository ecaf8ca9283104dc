import { QueryTypes, type Sequelize, type Transaction } from 'sequelize';
import type { Row } from '../rows.js';
import type { SqlRunner } from '../sql/dialect.js';

/**
 * Statements through Sequelize on SQLite. Statements that return rows start with a
 * comment: Sequelize's SQLite dialect runs anything starting with `insert into` through
 * `run()`, which drops the rows of `RETURNING` (and it trims leading white space). Row
 * counts come from `RETURNING 1`, appended to the statement.
 */
export function sqliteRunner(sequelize: Sequelize): SqlRunner {
  const select = <T = Row>(sql: string, bind: unknown[], transaction?: Transaction | null) =>
    sequelize.query(`/* outboxkit */ ${sql}`, {
      bind: bind.length ? bind : undefined,
      type: QueryTypes.SELECT,
      transaction: transaction ?? null,
      raw: true,
    }) as Promise<T[]>;
  return {
    select,
    async exec(sql, bind, transaction) {
      return (await select(`${sql} RETURNING 1 AS n`, bind, transaction)).length;
    },
    async run(sql, bind, transaction) {
      await sequelize.query(sql, {
        bind: bind.length ? bind : undefined,
        transaction: transaction ?? null,
        raw: true,
      });
    },
  };
}
