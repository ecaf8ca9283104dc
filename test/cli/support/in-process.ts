/**
 * The `outbox` command run in this process, through `main(argv, io)`: the same parse, the
 * same commands and the same output as the bin, in milliseconds rather than a `node` start
 * (with tsx compiling the CLI) per call. test/cli/bin.test.ts keeps the spawned runs that
 * only a real process shows: its exit code, its real signals, that it exits at once.
 *
 * The io: stdout and stderr are kept as text (neither is a terminal, as a pipe is not);
 * `env` is this process's environment with OUTBOX_DATABASE_URL and DATABASE_URL cleared
 * (so a developer's own setting never points a test at their database) and `options.env`
 * over it; the stop request is an AbortSignal {@link InProcessCli.stop} aborts.
 *
 * The config module is the app's code and reads `process.env` itself (the fixtures'
 * OUTBOX_TEST_RECEIVED, OUTBOX_TEST_APP_DB, …), so the variables of `options.env` other
 * than the database ones are also set on `process.env` while the command runs, and put
 * back after. Runs that overlap must agree on them: one that would change a variable
 * another running command set fails at once rather than let them see each other's.
 */
import type { CliIo } from '../../../cli/io.js';
import { main } from '../../../cli/main.js';
import { REPO } from './cli.js';

/** What a finished in-process `outbox` left behind. */
export interface InProcessResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** An `outbox` command running in this process, its output so far, and its end. */
export interface InProcessCli {
  readonly output: () => { stdout: string; stderr: string };
  /**
   * Ask it to stop, as SIGTERM does (`reason` is the signal name the relay logs). An abort
   * happens once: a second call does nothing.
   */
  readonly stop: (reason?: string) => void;
  readonly done: Promise<InProcessResult>;
}

/** Options of {@link startCliInProcess} and {@link runCliInProcess}. */
export interface InProcessOptions {
  /** The working directory the command runs in. @defaultValue the repository root */
  readonly cwd?: string;
  /** Variables over this process's environment (see the module comment). */
  readonly env?: Record<string, string>;
  /** A terminal to ask on: `stdin` (`{ isTTY: true }`) and the answer `confirm` gives. */
  readonly terminal?: Pick<CliIo, 'stdin' | 'confirm'>;
}

/** The variables the CLI itself reads: only ever from its io, never set on process.env. */
const CLI_VARIABLES = new Set(['OUTBOX_DATABASE_URL', 'DATABASE_URL']);

/** The variables in-process runs set on process.env, and what was there before. */
const exported = new Map<string, { value: string; before: string | undefined; holders: number }>();

/**
 * Set `env`'s config variables on process.env for a run; returns what puts them back once
 * the last run holding each ends.
 * @throws when a run still going set one of them to another value.
 */
function exportConfigVariables(env: Record<string, string>): () => void {
  const names = Object.keys(env).filter((name) => !CLI_VARIABLES.has(name));
  for (const name of names) {
    const held = exported.get(name);
    if (held && held.value !== env[name]) {
      throw new Error(
        `in-process outbox runs at once disagree on ${name} (${held.value} and ${env[name]}): the config module reads process.env, so they cannot both have theirs`,
      );
    }
  }
  for (const name of names) {
    const held = exported.get(name);
    if (held) held.holders += 1;
    else {
      exported.set(name, { value: env[name], before: process.env[name], holders: 1 });
      process.env[name] = env[name];
    }
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    for (const name of names) {
      const held = exported.get(name)!;
      held.holders -= 1;
      if (held.holders > 0) continue;
      exported.delete(name);
      if (held.before === undefined) delete process.env[name];
      else process.env[name] = held.before;
    }
  };
}

/** A sink that keeps what is written to it, as a pipe's reader would. */
function textSink(): { write(chunk: string): boolean; readonly text: () => string } {
  let text = '';
  return {
    write(chunk: string) {
      text += chunk;
      return true;
    },
    text: () => text,
  };
}

/** Start `outbox <args>` in this process (see the module comment). */
export function startCliInProcess(
  args: readonly string[],
  options: InProcessOptions = {},
): InProcessCli {
  const stdout = textSink();
  const stderr = textSink();
  const stopping = new AbortController();
  const given = options.env ?? {};
  const release = exportConfigVariables(given);
  const env = { ...process.env, OUTBOX_DATABASE_URL: '', DATABASE_URL: '', ...given };
  const done = main([process.execPath, 'outbox', ...args], {
    stdout,
    stderr,
    env,
    cwd: options.cwd ?? REPO,
    signal: stopping.signal,
    // Never this process's stdin: a test that asks hands its terminal.
    stdin: options.terminal?.stdin ?? { isTTY: false },
    confirm:
      options.terminal?.confirm ??
      (async (question) => {
        throw new Error(`outbox asked with no terminal given: ${question}`);
      }),
  })
    .then((code) => ({ code, stdout: stdout.text(), stderr: stderr.text() }))
    .finally(release);
  return {
    output: () => ({ stdout: stdout.text(), stderr: stderr.text() }),
    stop: (reason = 'SIGTERM') => stopping.abort(reason),
    done,
  };
}

/**
 * Run `outbox <args>` in this process to the end. After `timeoutMs` it is asked to stop
 * (a relay drains) and the test fails with what it wrote.
 */
export async function runCliInProcess(
  args: readonly string[],
  options: InProcessOptions & { readonly timeoutMs?: number } = {},
): Promise<InProcessResult> {
  const run = startCliInProcess(args, options);
  const timeoutMs = options.timeoutMs ?? 20_000;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      run.stop();
      const { stdout, stderr } = run.output();
      reject(
        new Error(
          `outbox ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
        ),
      );
    }, timeoutMs);
  });
  try {
    return await Promise.race([run.done, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
