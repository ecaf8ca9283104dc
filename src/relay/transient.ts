/**
 * Which database errors are worth retrying, as data (graphile-worker's
 * `RETRYABLE_ERROR_CODES`): serialization failures, deadlocks, a server starting up or
 * shutting down, and a connection that went away. The relay retries any database error
 * with backoff anyway (it must survive a restart); this table decides what is logged as
 * a passing fault rather than an error.
 */
export const TRANSIENT_ERROR_CODES: ReadonlySet<string> = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000', // connection_exception
  '08003', // connection_does_not_exist
  '08006', // connection_failure
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  // MariaDB and MySQL, as both drivers (mariadb, mysql2) name them in `code`: the server's
  // deadlock victim (SQLSTATE 40001, errno 1213), a lock wait past
  // innodb_lock_wait_timeout (1205), a server shutting down, and a connection that went away.
  'ER_LOCK_DEADLOCK',
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_ALREADY_CLOSED',
  'ER_SOCKET_UNEXPECTED_CLOSE',
  'PROTOCOL_CONNECTION_LOST',
]);

/**
 * What node-postgres says, with no code at all, when the connection under a query went
 * away (a restart, a cut network): the one place we read a driver's message text, as data,
 * because the driver gives nothing else to go by.
 */
export const TRANSIENT_DRIVER_MESSAGES: readonly string[] = [
  'Connection terminated unexpectedly',
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
];

/**
 * Whether an error (or its cause chain) carries a transient code from the table, or is a
 * driver's report of a lost connection.
 */
export function isTransientDatabaseError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    const record = e as {
      code?: unknown;
      parent?: unknown;
      original?: unknown;
      cause?: unknown;
      name?: unknown;
    };
    if (typeof record.code === 'string' && TRANSIENT_ERROR_CODES.has(record.code)) return true;
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string' && TRANSIENT_DRIVER_MESSAGES.includes(message)) return true;
    if (
      record.name === 'SequelizeConnectionError' ||
      record.name === 'SequelizeConnectionRefusedError'
    )
      return true;
    e = record.parent ?? record.original ?? record.cause;
  }
  return false;
}
