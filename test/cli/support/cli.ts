import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Sequelize } from 'sequelize';
import {
  mariadbTestDatabase,
  postgresTestSchema,
  postgresUrl,
} from '../../../testing/databases.js';
import { portableSqlOf } from '../../support/dialects.js';

/** The repository root. */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** The published bin, which runs the compiled CLI in dist/ (`npm run build`). */
export const BIN = join(REPO, 'bin/outbox.js');
/** The compiled CLI the bin imports. */
export const COMPILED_CLI = join(REPO, 'dist/cli/main.js');
/** The ping config as an app writes it: it also exports `sequelize` (OUTBOX_TEST_APP_DB). */
export const APP_CONFIG = join(REPO, 'test/cli/fixtures/app.config.ts');
/** The fixture config the relay and migrate tests run. */
export const PING_CONFIG = join(REPO, 'test/cli/fixtures/ping.config.ts');

/** What a finished `outbox` process left behind. */
export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running `outbox` process, its output so far, and its end. */
export interface CliProcess {
  readonly child: ChildProcess;
  readonly output: () => { stdout: string; stderr: string };
  readonly done: Promise<CliResult>;
}

/**
 * Start `node bin/outbox.js <args>` (the compiled CLI, what production runs) as a child
 * process in `cwd`. A test runs the CLI in-process (in-process.ts) unless what it checks
 * is the process itself (bin.test.ts, bin-relay.test.ts): a spawn costs seconds.
 * `env` is added to this process's environment; `OUTBOX_DATABASE_URL` and `DATABASE_URL`
 * are cleared unless given, so a developer's own setting never points a test at their
 * database.
 */
export function startCli(
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): CliProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? REPO,
    env: { ...process.env, OUTBOX_DATABASE_URL: '', DATABASE_URL: '', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, output: () => ({ stdout, stderr }), done };
}

/** Run `outbox <args>` to the end; kills it (and fails) after `timeoutMs`. */
export async function runCli(
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CliResult> {
  const run = startCli(args, options);
  const timeoutMs = options.timeoutMs ?? 20_000;
  const timer = setTimeout(() => run.child.kill('SIGKILL'), timeoutMs);
  try {
    const result = await run.done;
    if (result.signal === 'SIGKILL') {
      throw new Error(
        `outbox ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
      );
    }
    return result;
  } finally {
    clearTimeout(timer);
  }
}

/** Wait until `check()` is true, polling; throws with `what` after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 15_000,
) {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The numbers the ping fixture's receiver wrote to `file`, in the order it wrote them. */
export function receivedNumbers(file: string): number[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map(Number);
}

/** A database for a CLI test: the test's own connection, and the flags that point `outbox` at it. */
export interface CliDatabase {
  readonly dialect: 'sqlite' | 'postgres' | 'mariadb' | 'mysql';
  /** Spread into `createOutbox(config, { ...db.outboxOptions })`. */
  readonly outboxOptions: { sequelize: Sequelize; schema?: string };
  /** `--url …` (and `--schema …` on PostgreSQL). */
  readonly args: readonly string[];
  /** The database's URL, as `--url` or a variable takes it. */
  readonly url: string;
  /** `--schema …` on PostgreSQL, nothing on SQLite. */
  readonly schemaArgs: readonly string[];
  cleanup(): Promise<void>;
}

/**
 * Open a fresh database the test and an `outbox` child process share: a SQLite file in a
 * temp folder, or a PostgreSQL schema of its own.
 */
export async function openCliDatabase(
  dialect: 'sqlite' | 'postgres' | 'mariadb' | 'mysql',
): Promise<CliDatabase> {
  if (dialect === 'mariadb' || dialect === 'mysql') {
    // A database of its own, named in the URL: no --schema (MariaDB has none).
    const db = await mariadbTestDatabase(dialect);
    return portableSqlOf({
      dialect,
      outboxOptions: db.outboxOptions,
      args: ['--url', db.url],
      url: db.url,
      schemaArgs: [],
      cleanup: () => db.cleanup(),
    });
  }
  if (dialect === 'postgres') {
    const db = await postgresTestSchema();
    return {
      dialect,
      outboxOptions: db.outboxOptions,
      args: ['--url', postgresUrl(), '--schema', db.outboxOptions.schema!],
      url: postgresUrl(),
      schemaArgs: ['--schema', db.outboxOptions.schema!],
      cleanup: () => db.cleanup(),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'outbox-cli-'));
  const file = join(dir, 'cli.sqlite');
  const sequelize = new Sequelize({ dialect: 'sqlite', storage: file, logging: false });
  return {
    dialect,
    outboxOptions: { sequelize },
    args: ['--url', `sqlite:${file}`],
    url: `sqlite:${file}`,
    schemaArgs: [],
    async cleanup() {
      await sequelize.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
