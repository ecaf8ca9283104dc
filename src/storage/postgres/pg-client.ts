/**
 * The relay's hot statements straight on a node-postgres client of the Sequelize pool,
 * as named prepared statements: parsed and planned once per connection, and spared
 * Sequelize's query path (its query object, logging, result shaping: about 40 µs of
 * client CPU per statement, measured in bench/). The connection is the pool's own, so the
 * pool's size, hooks and validation still apply; only the statement skips Sequelize.
 *
 * Given up with the store's `preparedStatements: false` (a pooler that cannot carry
 * prepared statements): the statement then goes unnamed, still on the client. Each
 * statement is still written to Sequelize's `logging`, as Sequelize writes its own.
 */

import { ConnectionAcquireTimeoutError, type Sequelize } from 'sequelize';
import {
  instanceOptions,
  connectionManager as internalConnectionManager,
  logAsSequelize,
} from '../../sequelize/internals.js';

/** The part of a node-postgres `Client` the store uses. */
export interface PgClient {
  query(config: {
    name?: string;
    text: string;
    values?: unknown[];
  }): Promise<{ rows: unknown[]; rowCount: number | null }>;
  query(text: string): Promise<PgResult | PgResult[]>;
  /** node-postgres' own quoting of a string literal (doubles quotes and backslashes). */
  escapeLiteral(value: string): string;
  /** Set by Sequelize to the id of the transaction that holds the connection. */
  uuid?: string;
}

/** A statement for {@link runStatement}: named to run prepared. */
export interface PgStatement {
  readonly name?: string;
  readonly text: string;
  readonly values: unknown[];
}

/** node-postgres' `Query`, built the way {@link runStatement} builds it. */
type PgQueryClass = new (
  text: string,
  values: unknown[],
  callback: (error: Error | null, result: PgResult) => void,
) => { name?: string };

/**
 * Run a statement on a client. node-postgres copies a query given as a config object
 * through `Object.getOwnPropertyDescriptors` (4-6 µs a statement, measured), but not one
 * given as text and values; so the query is built from text and values, and named after.
 * Falls back to the config form for a client without `Client.Query`.
 */
export function runStatement(client: PgClient, statement: PgStatement): Promise<PgResult> {
  const Query = (client.constructor as { Query?: PgQueryClass }).Query;
  if (!Query || !statement.name) return client.query({ ...statement });
  return new Promise((resolve, reject) => {
    const query = new Query(statement.text, statement.values, (error, result) =>
      error ? reject(error) : resolve(result),
    );
    query.name = statement.name;
    (client as unknown as { query(q: unknown): unknown }).query(query);
  });
}

/** One statement's result. */
export interface PgResult {
  readonly rows: unknown[];
  readonly rowCount: number | null;
}

/** What Sequelize's connection manager offers and does not type. */
interface ConnectionManager {
  getConnection(options?: { uuid?: string }): Promise<unknown>;
  releaseConnection(connection: unknown): void;
  /** sequelize-pool's pool; with read replication, an object of two pools (`read`, `write`). */
  readonly pool?: { acquire(): Promise<unknown>; readonly read?: unknown };
}

/** The Sequelize instance's connection manager. */
export function connectionManager(sequelize: Sequelize): ConnectionManager {
  return internalConnectionManager<ConnectionManager>(sequelize);
}

/**
 * Take a connection from the instance's pool for one of the relay's statements or a
 * handler's transaction. Sequelize's `getConnection` wraps the pool's `acquire` in two
 * hook runs (`beforePoolAcquire`, `afterPoolAcquire`) and a version check, awaited even
 * when no hook is registered: 3.3-4.9 µs per acquire and release against 2.6-2.8 µs for
 * the pool alone, warm (bench/experiments/pool-acquire.ts), and more on a relay just woken
 * from idle, on every claim and handler. So when no hook is registered, the server's version is known (Sequelize
 * learns it on its first connection), the pool is a single one (no read replication) and
 * `getConnection` is Sequelize's own (not replaced by `close()` or by instrumentation),
 * this asks the pool directly, as `getConnection` then would, and turns the pool's
 * timeout into Sequelize's `ConnectionAcquireTimeoutError` as it does. In every other
 * case it is `getConnection` itself, so a hook a user registered still runs.
 */
export function acquireConnection(
  sequelize: Sequelize,
  options?: { uuid?: string },
): Promise<unknown> {
  const manager = connectionManager(sequelize);
  const pool = manager.pool;
  if (
    pool === undefined ||
    pool.read !== undefined ||
    // Replaced on the instance: closed (Sequelize's close() makes it throw) or wrapped
    // (instrumentation); either way it must be the one called.
    Object.hasOwn(manager, 'getConnection') ||
    instanceOptions(sequelize).databaseVersion === 0 ||
    sequelize.hasHook('beforePoolAcquire' as never) ||
    sequelize.hasHook('afterPoolAcquire' as never)
  ) {
    return manager.getConnection(options);
  }
  return pool.acquire().catch((error: unknown) => {
    throw (error as { constructor?: { name?: unknown } } | null)?.constructor?.name ===
      'TimeoutError'
      ? new ConnectionAcquireTimeoutError(error as Error)
      : error;
  });
}

/** Whether a pool connection is a node-postgres client this module can drive. */
export function isPgClient(connection: unknown): connection is PgClient {
  const c = connection as Partial<PgClient> | null;
  return !!c && typeof c.query === 'function' && typeof c.escapeLiteral === 'function';
}

/**
 * Write a statement to the instance's `logging` the way Sequelize writes its own
 * (`Executing (<transaction id>|default): <sql>`), so a user who logs SQL sees the
 * relay's too. Nothing is built when logging is off.
 */
export function logStatement(sequelize: Sequelize, uuid: string | undefined, text: string): void {
  if (instanceOptions(sequelize).logging)
    logAsSequelize(sequelize, `Executing (${uuid ?? 'default'}): ${text}`);
}

/**
 * Run one statement on a connection of the pool, outside any transaction (it commits on
 * its own), and give the connection back. A connection that broke under the statement is
 * marked by the driver (`_invalid`, through Sequelize's error listener), and the pool
 * replaces it on its next acquire.
 */
export async function runPooled(sequelize: Sequelize, statement: PgStatement): Promise<PgResult> {
  const manager = connectionManager(sequelize);
  const connection = await acquireConnection(sequelize);
  try {
    if (!isPgClient(connection))
      throw new Error('outboxkit: the PostgreSQL pool gave a connection that is not a pg client');
    logStatement(sequelize, undefined, statement.text);
    return await runStatement(connection, statement);
  } finally {
    manager.releaseConnection(connection);
  }
}
