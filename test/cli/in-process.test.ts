/**
 * Issue 27: `main(argv, io)` runs a command in this process — its output on io's streams,
 * its database variables from io's env, its config afresh for every call, and nothing
 * left open behind it.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { main } from '../../cli/main.js';
import { postgresTestSchema, postgresUrl, withSearchPath } from '../../testing/databases.js';
import { APP_CONFIG, PING_CONFIG, REPO, waitFor } from './support/cli.js';
import { runCliInProcess, startCliInProcess } from './support/in-process.js';

/** The connections, servers and timers this process holds, by kind. */
function handles(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

describe('outbox in-process', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-cli-in-process-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes to the io given, and returns the exit code', async () => {
    let stdout = '';
    let stderr = '';
    const code = await main([process.execPath, 'outbox', 'relay', '--help'], {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(/^Usage: outbox relay \[options\]/);
    expect(stderr).toBe('');

    const refused = await runCliInProcess(['relay', '--bogus']);
    expect([refused.code, refused.stdout]).toEqual([1, '']);
    expect(refused.stderr).toContain("error: unknown option '--bogus'");
  });

  it("reads the database variables from io's env, never from process.env", async () => {
    const file = join(dir, 'process-env.sqlite');
    process.env.OUTBOX_DATABASE_URL = `sqlite:${file}`;
    try {
      const result = await main([process.execPath, 'outbox', 'migrate', '-c', PING_CONFIG], {
        stdout: { write: () => true },
        stderr: { write: () => true },
        env: {},
      });
      expect(result).toBe(1);
      const named = await runCliInProcess(['migrate', '-c', PING_CONFIG], {
        env: { OUTBOX_DATABASE_URL: `sqlite:${join(dir, 'io-env.sqlite')}` },
      });
      expect(named.stdout).toContain('io-env.sqlite (from OUTBOX_DATABASE_URL)');
    } finally {
      delete process.env.OUTBOX_DATABASE_URL;
    }
  });

  it('finds the config and resolves sqlite: paths in io.cwd', async () => {
    const cwd = mkdtempSync(join(dir, 'cwd-'));
    writeFileSync(
      join(cwd, 'outbox.config.ts'),
      `export { default } from ${JSON.stringify(PING_CONFIG)};\n`,
    );
    const result = await runCliInProcess(['migrate', '--url', 'sqlite:here.sqlite'], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('migrated sqlite:here.sqlite (from --url)');
    expect(existsSync(join(cwd, 'here.sqlite'))).toBe(true);
  });

  it('loads a config afresh for every call, so an edit between two calls is seen', async () => {
    // Inside the repository (its .outbox-tmp/ is ignored), so the config finds zod.
    mkdirSync(join(REPO, '.outbox-tmp'), { recursive: true });
    const edited = mkdtempSync(join(REPO, '.outbox-tmp', 'cli-edited-'));
    const file = join(edited, 'outbox.config.ts');
    const config = (name: string) =>
      [
        "import { z } from 'zod';",
        `import { defineOutbox, event } from ${JSON.stringify(join(REPO, 'src/declare/index.js'))};`,
        `export default defineOutbox({ events: { '${name}': event({ schema: z.object({}) }) }, receivers: {} });`,
        '',
      ].join('\n');
    const channels = async () => {
      const result = await runCliInProcess([
        'catalogue',
        'asyncapi',
        '--config',
        file,
        '--format',
        'json',
      ]);
      expect(result.code, result.stderr).toBe(0);
      return Object.values(
        (JSON.parse(result.stdout) as { channels: Record<string, { address: string }> }).channels,
      ).map((c) => c.address);
    };
    try {
      writeFileSync(file, config('first.Event'));
      expect(await channels()).toEqual(['first.Event']);
      writeFileSync(file, config('second.Event'));
      expect(await channels()).toEqual(['second.Event']);
    } finally {
      rmSync(edited, { recursive: true, force: true });
    }
  });

  it('a stop requested before the relay is running stops it as soon as it is', async () => {
    const file = join(dir, 'stop-early.sqlite');
    expect(
      (await runCliInProcess(['migrate', '-c', PING_CONFIG, '--url', `sqlite:${file}`])).code,
    ).toBe(0);
    const relay = startCliInProcess(['relay', '-c', PING_CONFIG, '--url', `sqlite:${file}`]);
    relay.stop('SIGINT');
    const result = await relay.done;
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('outbox: stopping (SIGINT)');
    expect(result.stderr).toContain('relay stopped');
  });

  it.skipIf(!inject('pgAvailable'))(
    'leaves no connection, server or timer open: its Sequelize, the config’s, the wakeup’s and the metrics endpoint are closed',
    async () => {
      const schema = await postgresTestSchema();
      const env = {
        OUTBOX_TEST_APP_DB: withSearchPath(postgresUrl(), schema.outboxOptions.schema!),
        OUTBOX_TEST_RECEIVED: join(dir, 'leak.txt'),
      };
      try {
        expect((await runCliInProcess(['migrate', '-c', APP_CONFIG], { env })).code).toBe(0);
        const before = handles();
        // The config's Sequelize (a 60 s idle pool), the relay's LISTEN connection, a
        // metrics server, and a URL over the config's: each opened, each closed again.
        const relay = startCliInProcess(['relay', '-c', APP_CONFIG, '--metrics-port', '0'], {
          env,
        });
        await waitFor(() => relay.output().stderr.includes('relay running'), 'the relay to start');
        relay.stop();
        expect((await relay.done).code).toBe(0);
        const over = await runCliInProcess(
          [
            'health',
            '-c',
            APP_CONFIG,
            '--url',
            postgresUrl(),
            '--schema',
            schema.outboxOptions.schema!,
            '--use-url-over-config',
          ],
          { env },
        );
        expect(over.code, over.stderr).toBe(0);
        await waitFor(
          () => {
            const now = handles();
            return Object.entries(now).every(([kind, n]) => n <= (before[kind] ?? 0));
          },
          `the handles to be closed (before: ${JSON.stringify(before)}, now: ${JSON.stringify(handles())})`,
          5_000,
        );
      } finally {
        await schema.cleanup();
      }
    },
  );
});
