import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { expect, it } from 'vitest';
import { counts, leftOpen } from '../support/leak-check.js';

/**
 * The suite's leak check (test/support/leak-check.ts, run after every file) sees what a file
 * leaves open, and stops seeing it once it is closed: so it can fail a file, and does not
 * fail one that cleaned up.
 */
it('sees a listening server, a child process and a ref’d timer left open, and nothing once they are closed', async () => {
  const start = counts();
  const server = createServer((_req, res) => res.end('ok'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const timer = setTimeout(() => {}, 60_000);
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  const left = leftOpen(start).join(', ');
  expect(left).toMatch(/TCPServerWrap ×1/);
  expect(left).toMatch(/Timeout ×1/);
  expect(left).toMatch(/ProcessWrap ×1/);

  clearTimeout(timer);
  child.kill();
  await once(child, 'exit');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  // A closed handle leaves Node's list a turn of the loop later, as the check allows for.
  for (let i = 0; i < 50 && leftOpen(start).length > 0; i++)
    await new Promise((resolve) => setImmediate(resolve));
  expect(leftOpen(start)).toEqual([]);
});

it('does not count an unref’d timer: it keeps nothing alive', () => {
  const start = counts();
  const timer = setTimeout(() => {}, 60_000).unref();
  expect(leftOpen(start)).toEqual([]);
  clearTimeout(timer);
});
