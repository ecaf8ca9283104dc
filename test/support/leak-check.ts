/**
 * The suite's leak check, run after every test file (vitest `setupFiles`): what a file
 * opened and left open — a socket (a pool's connection, a Redis or AMQP client), a
 * listening server, a child process, a timer that keeps the process alive — fails that
 * file, naming what is left. Files run in parallel workers; a leak would otherwise show up
 * as a hung worker or a flaky neighbour far from its cause.
 *
 * It counts Node's active resources (`process.getActiveResourcesInfo()`: only what keeps
 * the event loop alive, so an `unref`'d timer or socket is not a leak) by type when the
 * file starts (the first `beforeAll`) and again when it ends (the last `afterAll`: vitest
 * runs `afterAll` hooks in reverse order, and this file's are registered first). Both are
 * read inside a hook, so vitest's own hook timer is in both counts. A closing socket may
 * need a few turns of the loop to go (ioredis gives a closing socket 2 s): the check waits up
 * to three seconds before it fails.
 *
 * `OUTBOX_TEST_LEAKS=trace` adds where each leaked resource was made (an async hook
 * records the stack of every timer, socket, server and child made during the file: slow,
 * so only on request). `OUTBOX_TEST_LEAKS=ignore` turns the check off for the run.
 */
import { createHook } from 'node:async_hooks';
import { afterAll, beforeAll } from 'vitest';

/** Resource types that are never a file's own (stdio, the worker's channel to vitest). */
const NOT_OURS = new Set(['TTYWrap', 'PipeWrap', 'SignalWrap', 'FSEventWrap', 'StatWatcher']);

export function counts(): Map<string, number> {
  const map = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) {
    if (NOT_OURS.has(type)) continue;
    map.set(type, (map.get(type) ?? 0) + 1);
  }
  return map;
}

/** What is open now and was not at the start: `type ×n` each. */
export function leftOpen(start: Map<string, number>): string[] {
  const left: string[] = [];
  for (const [type, n] of counts()) {
    const more = n - (start.get(type) ?? 0);
    if (more > 0) left.push(`${type} ×${more}`);
  }
  return left;
}

const DESCRIBED: Record<string, string> = {
  TCPSocketWrap:
    'an open TCP connection (a Sequelize or pg pool not closed, a Redis, AMQP or Kafka client, an HTTP keep-alive socket)',
  TCPServerWrap: 'a listening server (an HTTP or metrics server not closed)',
  ProcessWrap: 'a child process still running',
  Timeout:
    'a timer that keeps the process alive (a relay loop not stopped, a setInterval not cleared)',
  Immediate: 'a pending setImmediate',
  UDPWrap: 'a UDP socket',
};

let start: Map<string, number> | undefined;

/** With `OUTBOX_TEST_LEAKS=trace`: the live resources made during the file, and where. */
const traced = new Map<number, { type: string; stack: string }>();
const TRACED_TYPES: Record<string, string> = {
  Timeout: 'Timeout',
  TCPWRAP: 'TCPSocketWrap',
  TCPSERVERWRAP: 'TCPServerWrap',
  PROCESSWRAP: 'ProcessWrap',
};
if (process.env.OUTBOX_TEST_LEAKS === 'trace') {
  createHook({
    init(id, type) {
      const shown = TRACED_TYPES[type];
      if (!shown) return;
      const stack = (new Error().stack ?? '')
        .split('\n')
        .slice(2)
        .filter((line) => !line.includes('node:internal') && !line.includes('leak-check'))
        .slice(0, 6)
        .join('\n');
      traced.set(id, { type: shown, stack });
    },
    destroy(id) {
      traced.delete(id);
    },
  }).enable();
}

beforeAll(() => {
  start = counts();
});

afterAll(async () => {
  if (process.env.OUTBOX_TEST_LEAKS === 'ignore' || start === undefined) return;
  let left = leftOpen(start);
  for (let i = 0; i < 150 && left.length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    left = leftOpen(start);
  }
  if (left.length === 0) return;
  const lines = left.map((l) => {
    const type = l.split(' ')[0];
    return `  - ${l}: ${DESCRIBED[type] ?? 'a resource of this type'}`;
  });
  const where = [...traced.values()]
    .filter((t) => left.some((l) => l.startsWith(`${t.type} `)))
    .map((t) => `  ${t.type} made at:\n${t.stack}`);
  throw new Error(
    `this test file left resources open after its last test:\n${lines.join('\n')}\nClose them in an afterAll (or with \`await using\`); OUTBOX_TEST_LEAKS=trace shows where each was made (test/support/leak-check.ts).${where.length ? `\n${where.join('\n')}` : ''}`,
  );
});
