import type { WakeupConnection } from '../../src/wakeups/wakeup.js';

/** A database URL as the relay hands it to `listen()`: the outbox database's settings. */
export function wakeupConnectionOf(url: string): WakeupConnection {
  const u = new URL(url);
  return {
    dialect: 'postgres',
    host: u.hostname,
    port: u.port ? Number(u.port) : 5432,
    user: decodeURIComponent(u.username) || undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database: u.pathname.slice(1) || undefined,
  };
}
