import { QueryTypes, type Sequelize, type Transaction } from 'sequelize';
import type { Row } from '../rows.js';
import type { SqlRunner } from '../sql/dialect.js';

/**
 * Statements through Sequelize on MariaDB and MySQL (both drivers). Every statement passes
 * its query type: Sequelize's RAW handling of a `mariadb` result throws (`Cannot delete
 * property 'meta'`); BULKUPDATE hands back the driver's `affectedRows` for any statement,
 * so row counts (and DDL) go through it. `affectedRows` counts the rows CHANGED, not those
 * matched: a statement whose compare-and-set matched a row but wrote the values it already
 * had counts 0 (the store re-reads where that can happen, see store.ts `renewLeases`).
 */
export function mariadbRunner(sequelize: Sequelize): SqlRunner {
  const bindOf = (bind: unknown[]) =>
    bind.length ? bind.map((v) => (v === undefined ? null : v)) : undefined;
  return {
    select<T = Row>(sql: string, bind: unknown[], transaction?: Transaction | null) {
      return sequelize.query(backticks(sql), {
        bind: bindOf(bind),
        type: QueryTypes.SELECT,
        transaction: transaction ?? null,
        raw: true,
      }) as Promise<T[]>;
    },
    async exec(sql, bind, transaction) {
      const n = await sequelize.query(backticks(sql), {
        bind: bindOf(bind),
        type: QueryTypes.BULKUPDATE,
        transaction: transaction ?? null,
        raw: true,
      });
      return Number(n ?? 0);
    },
    async run(sql, bind, transaction) {
      await sequelize.query(backticks(sql), {
        bind: bindOf(bind),
        type: QueryTypes.BULKUPDATE,
        transaction: transaction ?? null,
        raw: true,
      });
    },
  };
}

const translated = new Map<string, string>();

/**
 * `sql` with its double-quoted identifiers (`storage/sql/` and `tables.ts` quote that way,
 * as PostgreSQL and SQLite read them) in MariaDB's backticks; string literals untouched.
 * Each text is translated once and kept (the statements are a small, fixed set).
 */
export function backticks(sql: string): string {
  const known = translated.get(sql);
  if (known !== undefined) return known;
  let out = '';
  let quote: string | undefined;
  for (let i = 0; i < sql.length; i++) {
    const ch = sql[i] as string;
    if (quote === "'") {
      out += ch;
      if (ch === '\\') out += sql[++i] ?? '';
      else if (ch === "'") quote = undefined;
    } else if (quote === '"') {
      if (ch === '"' && sql[i + 1] === '"') {
        out += '"';
        i++;
      } else if (ch === '"') {
        out += '`';
        quote = undefined;
      } else out += ch === '`' ? '``' : ch;
    } else if (ch === "'") {
      quote = "'";
      out += ch;
    } else if (ch === '"') {
      quote = '"';
      out += '`';
    } else out += ch;
  }
  if (translated.size < 2_000) translated.set(sql, out);
  return out;
}
