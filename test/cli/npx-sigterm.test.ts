/**
 * Issue 33: why the docs say to run the relay through the bin itself in production, not
 * `npx`. npm's `npx outbox relay` (npm exec) starts the bin through a shell (`sh -c`), and
 * a SIGTERM sent to the npx process — what a process manager or `docker stop` sends to the
 * process it started — never reaches the relay: npx exits, and the relay runs on, orphaned
 * (its parent now init), still holding its claims. `./node_modules/.bin/outbox relay`
 * receives the SIGTERM itself and drains. Spawned for real: only a process tree shows it.
 * Measured with npm 11 and dash as /bin/sh; if an npm forwards the signal, this fails, and
 * docs/operations' advice can be relaxed.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutbox, silentLogger } from '../../src/index.js';
import config from './fixtures/ping.config.js';
import { BIN, COMPILED_CLI, openCliDatabase, PING_CONFIG, waitFor } from './support/cli.js';

/** Whether a process of this pid is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

let project: string;
beforeAll(() => {
  // An application's directory: the package installed, its bin linked where npm links it.
  project = mkdtempSync(join(tmpdir(), 'outbox-npx-'));
  mkdirSync(join(project, 'node_modules/.bin'), { recursive: true });
  symlinkSync(BIN, join(project, 'node_modules/.bin/outbox'));
  writeFileSync(join(project, 'package.json'), '{"name":"app","version":"1.0.0","private":true}');
});
afterAll(() => rmSync(project, { recursive: true, force: true }));

// SQLite only: the process tree is the same on every database.
describe('SIGTERM and npx [sqlite]', () => {
  /** Start `command args…` in the project; resolves with the relay's pid once it runs. */
  async function startRelay(command: string, args: string[], dbArgs: readonly string[]) {
    const child = spawn(
      command,
      [...args, 'relay', '--log-format', 'json', '-c', PING_CONFIG, ...dbArgs],
      {
        cwd: project,
        env: {
          ...process.env,
          OUTBOX_DATABASE_URL: '',
          DATABASE_URL: '',
          OUTBOX_TEST_RECEIVED: join(project, 'received.txt'),
          npm_config_update_notifier: 'false',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout.resume();
    // The orphan keeps the pipes: stop reading them once this process is done with it.
    const release = () => {
      child.stdout.destroy();
      child.stderr.destroy();
    };
    // 'exit', not 'close': an orphaned relay holds the pipes it inherited open.
    const exited = new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    await waitFor(() => stderr.includes('relay running'), `${command} relay to start`, 30_000);
    const running = stderr
      .split('\n')
      .filter((l) => l.includes('relay running'))
      .map((l) => JSON.parse(l) as { workerId: string })[0];
    // The worker id is `host:pid:…`: the pid of the process that runs the relay.
    const relayPid = Number(running.workerId.split(':')[1]);
    return { child, relayPid, exited, release, stderr: () => stderr };
  }

  it('a SIGTERM to npx leaves the relay running, orphaned; the bin run directly receives it and stops', async () => {
    expect(existsSync(COMPILED_CLI), `${COMPILED_CLI} is missing: run npm run build`).toBe(true);
    const db = await openCliDatabase('sqlite');
    const outbox = createOutbox(config, {
      ...db.outboxOptions,
      logger: silentLogger,
      wakeup: null,
    });
    await outbox.migrate();
    await outbox.close();
    let orphan: number | undefined;
    try {
      const viaNpx = await startRelay('npx', ['--no-install', 'outbox'], db.args);
      expect(viaNpx.relayPid).not.toBe(viaNpx.child.pid); // npx → sh → node: not npx itself
      viaNpx.child.kill('SIGTERM');
      await viaNpx.exited;
      orphan = viaNpx.relayPid;
      // npx is gone; the relay is not, and never heard of the SIGTERM.
      await new Promise((r) => setTimeout(r, 500));
      expect(alive(orphan)).toBe(true);
      expect(viaNpx.stderr()).not.toContain('stopping (SIGTERM)');
      process.kill(orphan, 'SIGTERM');
      await waitFor(() => !alive(orphan!), 'the orphaned relay to stop on its own SIGTERM');
      orphan = undefined;
      viaNpx.release();

      const direct = await startRelay('./node_modules/.bin/outbox', [], db.args);
      expect(direct.relayPid).toBe(direct.child.pid);
      direct.child.kill('SIGTERM');
      expect(await direct.exited).toBe(0);
      direct.release();
      expect(direct.stderr()).toContain('stopping (SIGTERM)');
    } finally {
      if (orphan !== undefined && alive(orphan)) process.kill(orphan, 'SIGKILL');
      await db.cleanup();
    }
  }, 90_000);
});
