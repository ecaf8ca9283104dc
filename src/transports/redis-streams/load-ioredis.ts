import type { Redis as IoRedis } from 'ioredis';
import { ConfigurationError } from '../../errors/outbox-error.js';

/** The ioredis client class, as the package exports it. */
export type IoRedisClass = typeof IoRedis;

/**
 * Load ioredis, an optional peer dependency (only an app sending to Redis installs it),
 * when a Redis transport or wakeup first needs a connection, so `import 'outboxkit'` loads
 * no Redis client. When it is the package that is missing, say how to install it; any
 * other failure is passed on as it is.
 *
 * @param who - the factory asking (`redisStreams()`, `redisWakeup()`), named in the hint
 */
export async function loadIoRedis(who: string): Promise<IoRedisClass> {
  try {
    const module = await import('ioredis');
    return module.Redis ?? module.default;
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !/['"]ioredis['"]/.test(String(e.message)))
      throw error;
    throw new ConfigurationError(
      `${who} needs the ioredis package, which is not installed: run \`npm install ioredis\``,
      { cause: error },
    );
  }
}

/**
 * A Redis URL fit for a message: without its user and password (`redis://:secret@host`)
 * and its query, since no secret may reach a log line or `last_error`.
 */
export function redactRedisUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^@/]*@/i, '$1').replace(/\?.*$/, '');
}

/** Refuse a URL that is not `redis://` or `rediss://`, before anything connects. */
export function checkRedisUrl(who: string, url: unknown): string {
  if (typeof url !== 'string' || !/^rediss?:\/\//.test(url)) {
    throw new ConfigurationError(
      `${who}({ url }) must be a redis:// or rediss:// URL (got ${typeof url === 'string' ? redactRedisUrl(url) : typeof url})`,
    );
  }
  return url;
}

/** How long closing waits for `QUIT` to be answered before dropping the socket. */
const QUIT_WAIT_MS = 1_000;

/** `QUIT` politely, but drop the socket if Redis does not answer in time (it may be gone). */
export async function quitOrDrop(client: IoRedis): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.quit(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, QUIT_WAIT_MS);
        timer.unref();
      }),
    ]);
  } catch {
    // already closed, or the connection broke: disconnect below either way
  } finally {
    if (timer) clearTimeout(timer);
    client.disconnect();
  }
}
