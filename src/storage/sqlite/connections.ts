import type { Sequelize } from 'sequelize';
import { connectionManager } from '../../sequelize/internals.js';

const BUSY_TIMEOUT_MS = 10_000;
const CONFIGURED = Symbol.for('outboxkit.sqlite.configured');

interface SqliteConnection {
  configure(option: 'busyTimeout', value: number): void;
  [CONFIGURED]?: boolean;
}

/**
 * Give every connection Sequelize opens a busy timeout, so a writer waits for the lock
 * instead of failing with SQLITE_BUSY. Sequelize's SQLite dialect opens one connection per
 * transaction and runs no hook when it does, so this wraps its connection manager once
 * per Sequelize instance.
 */
export function configureConnections(sequelize: Sequelize): void {
  const manager = connectionManager<Record<PropertyKey, unknown>>(sequelize);
  if (manager[CONFIGURED]) return;
  const getConnection = (manager.getConnection as (o: unknown) => Promise<SqliteConnection>).bind(
    manager,
  );
  manager.getConnection = async (options: unknown) => {
    const connection = await getConnection(options);
    if (!connection[CONFIGURED]) {
      connection.configure('busyTimeout', BUSY_TIMEOUT_MS);
      connection[CONFIGURED] = true;
    }
    return connection;
  };
  manager[CONFIGURED] = true;
}
