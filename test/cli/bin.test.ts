/**
 * The spawned runs: `node bin/outbox.js …` (and `npx outbox`), the compiled CLI in dist/
 * (`npm run build`; the `prepare` script) in a process of its own, as users run it — one
 * smoke test per command group, for what only a real process shows: its exit code, its
 * output reaching the pipes before it exits, and that it exits at all. Every other CLI
 * test runs the same `main` in-process (support/in-process.ts); the relay's real signals
 * are in bin-relay.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { renderAsyncApi } from '../../catalogue/asyncapi.js';
import { parseCatalogue } from '../../catalogue/read-catalogue.js';
import { createOutbox, type Outbox, silentLogger } from '../../src/index.js';
import config from './fixtures/ping.config.js';
import {
  type CliDatabase,
  COMPILED_CLI,
  openCliDatabase,
  PING_CONFIG,
  REPO,
  runCli,
} from './support/cli.js';

/** `node bin/outbox.js <args>`. */
const bin = runCli;

describe('npx outbox', () => {
  it('the compiled CLI is there (npm run build)', () => {
    expect(existsSync(COMPILED_CLI), `${COMPILED_CLI} is missing: run npm run build`).toBe(true);
  });

  it('runs the compiled CLI and lists its commands', () => {
    const result = spawnSync('npx', ['outbox', '--help'], { cwd: REPO, encoding: 'utf8' });
    expect(result.status).toBe(0);
    for (const command of ['migrate', 'relay', 'demo', 'codegen', 'catalogue']) {
      expect(result.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    }
  });
});

describe('node bin/outbox.js, a command of each group', () => {
  let dir: string;
  let db: CliDatabase;
  let outbox: Outbox<typeof config>;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outbox-cli-bin-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(async () => {
    db = await openCliDatabase('sqlite');
    outbox = createOutbox(config, { ...db.outboxOptions, logger: silentLogger, wakeup: null });
  });
  afterEach(async () => {
    await outbox.close();
    await db.cleanup();
  });

  it('--version prints the version, and a bad option exits 1', async () => {
    const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
    const printed = await bin(['--version']);
    expect([printed.code, printed.stdout]).toEqual([0, `${version}\n`]);
    const refused = await bin(['relay', '--batch-size', 'abc']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("option '--batch-size <n>' argument 'abc' is invalid");
  });

  it('migrate --check exits 2 before, migrate 0, and --check 0 after', async () => {
    const before = await bin(['migrate', '--check', '-c', PING_CONFIG, ...db.args]);
    expect(before.code).toBe(2);
    const migrated = await bin(['migrate', '-c', PING_CONFIG, ...db.args]);
    expect([migrated.code, migrated.stderr]).toEqual([0, '']);
    expect(migrated.stdout).toMatch(
      /^outbox: migrated sqlite:.*: applied migration 1, 2, 3, 4, 5, 6\n$/,
    );
    const after = await bin(['migrate', '--check', '-c', PING_CONFIG, ...db.args]);
    expect(after.code).toBe(0);
    expect(after.stdout).toContain('is up to date (migrations 1, 2, 3, 4, 5, 6)');
  });

  it('health prints the table on stdout and exits 2 past a threshold', async () => {
    await outbox.migrate();
    await outbox.fire('test.Ping', { n: 1 });
    const result = await bin(['health', '--max-owed', '0', '-c', PING_CONFIG, ...db.args]);
    expect(result.code).toBe(2);
    expect(result.stdout).toMatch(/^owed 1, /);
    expect(result.stderr).toContain('outbox: past --max-owed: 1 (max 0)');
  });

  it('dead exits 0 with no dead letter, and replay exits 2 for an id that names no event', async () => {
    await outbox.migrate();
    const none = await bin(['dead', '-c', PING_CONFIG, ...db.args]);
    expect([none.code, none.stdout]).toEqual([0, expect.stringContaining('no dead letters')]);
    const unknown = '01900000-0000-7000-8000-000000000000';
    const missing = await bin(['replay', unknown, '--json', '-c', PING_CONFIG, ...db.args]);
    expect(missing.code).toBe(2);
    expect(JSON.parse(missing.stdout)).toEqual({ reopened: 0, added: 0, missing: [unknown] });
  });

  it('prune --dry-run --json prints its result and exits 0', async () => {
    await outbox.migrate();
    const result = await bin(['prune', '--dry-run', '--json', '-c', PING_CONFIG, ...db.args]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ dryRun: true, events: 0 });
  });

  it('quiet-receivers exits 2 when a receiver never ran', async () => {
    await outbox.migrate();
    const result = await bin(['quiet-receivers', '-c', PING_CONFIG, ...db.args]);
    expect(result.code).toBe(2);
    expect(result.stdout).toMatch(/test\.record\s+test\.Ping\s+never/);
  });

  it('codegen writes the generated files and exits 0', async () => {
    const result = await bin([
      'codegen',
      '-c',
      join(REPO, 'test/cli/fixtures/plain-js.config.js'),
      '--out',
      join(dir, 'outbox.generated.ts'),
      '--catalogue-dir',
      join(dir, 'catalogue'),
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('outbox codegen: wrote ');
    expect(existsSync(join(dir, 'catalogue/catalogue.json'))).toBe(true);
  });

  it("catalogue asyncapi prints the YAML document of catalogue/catalogue.json, titled by the project's package.json", async () => {
    const result = await bin(['catalogue', 'asyncapi']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
    };
    const file = join(REPO, 'catalogue/catalogue.json');
    const catalogue = parseCatalogue(readFileSync(file, 'utf8'), file);
    expect(result.stdout).toBe(
      renderAsyncApi(catalogue, { title: pkg.name, version: pkg.version }),
    );
  });

  it('demo runs the shop from nothing and exits 0', async () => {
    const result = await bin(['demo'], { timeoutMs: 80_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/dead +1 {2}dead letters/);
    expect(result.stderr.trimEnd().split('\n').at(-1)).toMatch(/^ {3}relay: 1191 delivered · /);
  }, 90_000);

  it('catalogue diff exits 2 for a catalogue it cannot read', async () => {
    const result = await bin(['catalogue', 'diff', join(dir, 'nope.json')], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('outbox catalogue diff: ');
  });
});
