/**
 * EXPERIMENT, not outboxkit's behaviour: run `fire()`'s INSERT of event and delivery rows
 * as a named (prepared) statement on the transaction's own pg connection, so PostgreSQL
 * parses and plans it once per connection instead of on every call. Enabled by
 * `npm run bench -- --only write --experiment prepared-insert`, to measure the fix proposed
 * for `PostgresStore.insertEvents` (see bench/README.md) before it lands in src/.
 *
 * It intercepts `sequelize.query` for exactly the statement `fire()` sends (recognised by
 * the text captured from a first, ordinary fire), so it may break when src/ changes;
 * delete it once src/ prepares the statement itself.
 */
import { createHash } from 'node:crypto';
import type { Sequelize, Transaction } from 'sequelize';

interface PgConnection {
  query(config: {
    name: string;
    text: string;
    values: readonly unknown[];
  }): Promise<{ rows: unknown[] }>;
}

type Query = (
  sql: string,
  options?: { bind?: unknown[]; transaction?: Transaction | null },
) => Promise<unknown>;

/**
 * Call `fireOnce` (one ordinary fire), capture the INSERT it sends, and from then on send
 * that statement prepared. Returns a function that undoes the interception.
 */
export async function usePreparedInsert(
  sequelize: Sequelize,
  fireOnce: () => Promise<unknown>,
): Promise<() => void> {
  const holder = sequelize as unknown as { query: Query };
  const original = holder.query.bind(sequelize);
  let insertSql: string | undefined;
  holder.query = (sql, options) => {
    if (insertSql === undefined && /^\s*WITH e AS \(\s*INSERT INTO/.test(sql)) insertSql = sql;
    return original(sql, options);
  };
  await fireOnce();
  if (!insertSql) {
    holder.query = original;
    throw new Error('prepared-insert: fire() sent no statement of the expected shape');
  }
  const text = insertSql;
  const name = `outboxkit_fire_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`;
  holder.query = async (sql, options) => {
    const connection = (options?.transaction as unknown as { connection?: PgConnection } | null)
      ?.connection;
    if (sql !== text || !connection) return original(sql, options);
    const result = await connection.query({ name, text, values: options?.bind ?? [] });
    return result.rows;
  };
  return () => {
    holder.query = original;
  };
}
