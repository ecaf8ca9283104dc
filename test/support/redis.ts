import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { Redis } from 'ioredis';

/** The shared local Redis the tests talk to (`.ci/run` starts it when it is down). */
export const REDIS_URL = process.env.OUTBOX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A name of its own for a stream, channel or key, so test files run side by side. */
export function uniqueRedisName(prefix: string): string {
  return `${prefix}:${randomBytes(6).toString('hex')}`;
}

/** A plain client of the test's own, to read back what arrived and to arrange Redis. */
export function testRedis(url = REDIS_URL): Redis {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  return client;
}

/**
 * A TCP proxy in front of Redis that a test can cut, stall and restore, so one client
 * loses its server while the server itself (shared with other test files) stays up. It
 * also counts round trips: a `turn` begins each time the client writes after the server
 * last answered, so a batch sent through one pipeline is one turn and a batch sent one
 * command at a time is one turn per command.
 */
export async function redisProxy(target: URL = new URL(REDIS_URL)) {
  const sockets = new Set<Socket>();
  let mode: 'up' | 'down' | 'stalled' = 'up';
  let turns = 0;
  let lastFrom: 'client' | 'server' = 'server';
  let connections = 0;
  const server: Server = createServer((client) => {
    connections += 1;
    if (mode === 'down') {
      client.destroy();
      return;
    }
    const upstream = tcpConnect(Number(target.port || 6379), target.hostname);
    for (const [a, b, from] of [
      [client, upstream, 'client'],
      [upstream, client, 'server'],
    ] as const) {
      sockets.add(a);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
      a.on('data', (chunk: Buffer) => {
        // Stalled: swallow what the client sends, answer nothing (a server that hangs).
        if (mode === 'stalled') return;
        if (from === 'client' && lastFrom === 'server') turns += 1;
        lastFrom = from;
        b.write(chunk);
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    url: `redis://127.0.0.1:${address.port}`,
    /** Drop every open connection, and refuse new ones until restored. */
    cut() {
      mode = 'down';
      for (const s of sockets) s.destroy();
    },
    /** Keep connections open but let nothing through either way. */
    stall() {
      mode = 'stalled';
    },
    restore() {
      mode = 'up';
    },
    /** How many connections clients opened (or tried to, while cut) so far. */
    connections: () => connections,
    /** Round trips since the last call (see above). */
    takeTurns() {
      const n = turns;
      turns = 0;
      return n;
    },
    async close() {
      mode = 'down';
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type RedisProxy = Awaited<ReturnType<typeof redisProxy>>;
