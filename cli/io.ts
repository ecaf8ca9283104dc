/**
 * What the `outbox` command line reads and writes in place of the process's globals: two
 * output streams, an environment, a working directory, and the stop request a running
 * relay (or prune) obeys. {@link run} — what `bin/outbox.js` calls — hands over the
 * process's own; a test, or an application embedding the CLI, hands its own to
 * `main(argv, io)` and runs a command in-process, without a `node` start per call.
 *
 * The config module is not the CLI's: it is the application's code, loaded as it is, and
 * reads `process.env` as ever. `io.env` is what the CLI itself reads (the database URL
 * variables, `NO_COLOR`).
 */
import type { LogStream } from '../src/observe/write-logger.js';

/**
 * A sink a command writes text to: `process.stdout`, a file stream, a test's buffer. Only
 * `write` is called (the progress bar's cursor moves too are `write`s of escapes).
 */
export interface CliStream extends LogStream {
  /** The terminal's width, read when `isTTY` (the progress bar, the help's wrapping). */
  readonly columns?: number;
}

/** The environment the CLI reads: `process.env`, or a record of a test's own. */
export type CliEnv = Readonly<Record<string, string | undefined>>;

/** Everything a command reads from and writes to outside its flags (see the module comment). */
export interface CliIo {
  /** A command's result: the report, `--json`, `--print-sql`, the help. */
  readonly stdout: CliStream;
  /** Progress, warnings, errors, and the outbox's own log lines. */
  readonly stderr: CliStream;
  /** Where `OUTBOX_DATABASE_URL`, `DATABASE_URL` and `NO_COLOR` are read. */
  readonly env: CliEnv;
  /** Where the config is looked up and relative paths (`sqlite:file`, `--out`) resolve. */
  readonly cwd: string;
  /**
   * Stands in for SIGTERM/SIGINT: aborting it stops a running `relay` (it drains, as at the
   * first signal) or `prune` (between batches). Its `reason`, when a string, is the signal
   * name the relay logs (`stopping (SIGTERM)`). An abort happens once, so the second
   * signal a process can receive (the relay then stops waiting for the deliveries in hand)
   * has no stand-in here: `--shutdown-timeout` still bounds the drain.
   * `undefined`: the process's own SIGTERM and SIGINT.
   */
  readonly signal: AbortSignal | undefined;
  /**
   * Where an answer to a question would come from: only whether it is a terminal is read
   * (`process.stdin`; a test hands `{ isTTY: true }`). Off a terminal nobody can answer, so
   * a command that would ask (a bare `requeue-dead`) refuses instead.
   */
  readonly stdin: { readonly isTTY?: boolean };
  /**
   * Ask the person at the terminal a yes/no question (`question` ends in `[y/N]`); resolves
   * true only for a yes. Called only when `stdin` is a terminal. The process's own reads a
   * line from `process.stdin`, the question on stderr; a test hands its answer.
   */
  readonly confirm: (question: string) => Promise<boolean>;
}

/**
 * The io a command runs with: what is given, the process's own for the rest (its
 * streams, `process.env`, `process.cwd()`, its real signals).
 */
export function cliIo(io: Partial<CliIo> = {}): CliIo {
  return {
    stdout: io.stdout ?? process.stdout,
    stderr: io.stderr ?? process.stderr,
    env: io.env ?? process.env,
    cwd: io.cwd ?? process.cwd(),
    signal: io.signal,
    stdin: io.stdin ?? process.stdin,
    confirm: io.confirm ?? ((question) => askOnTerminal(question, io.stderr ?? process.stderr)),
  };
}

/** {@link CliIo.confirm} of the process: one line read from `process.stdin`, `y`/`yes` a yes. */
async function askOnTerminal(question: string, output: CliStream): Promise<boolean> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: output as NodeJS.WritableStream });
  try {
    const answer = await rl.question(`${question} `);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/**
 * Whether text for `stream` may be coloured: a terminal, and `NO_COLOR` unset
 * (https://no-color.org), the rule `prettyLogger` applies to the process's own.
 */
export function colorsOn(stream: CliStream, env: CliEnv): boolean {
  return stream.isTTY === true && env.NO_COLOR === undefined;
}

/** Process signals a stop request stands for (see {@link CliIo.signal}). */
const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

/**
 * Call `handler` with the signal's name when the command is asked to stop: at each
 * SIGTERM/SIGINT of the process, or once when `io.signal` aborts (at once if it already
 * has). `once`: each process signal calls it at most once, and a second signal of that
 * name meets Node's default (the process ends), as `process.once` does.
 * @returns what removes the handler again (idempotent).
 */
export function onStopRequest(
  io: Pick<CliIo, 'signal'>,
  handler: (signal: string) => void,
  options: { readonly once?: boolean } = {},
): () => void {
  const { signal } = io;
  if (signal === undefined) {
    for (const name of STOP_SIGNALS) {
      if (options.once) process.once(name, handler);
      else process.on(name, handler);
    }
    return () => {
      for (const name of STOP_SIGNALS) process.off(name, handler);
    };
  }
  const onAbort = () => handler(typeof signal.reason === 'string' ? signal.reason : 'abort');
  if (signal.aborted) {
    // Asynchronously, as a signal arrives: the caller finishes setting up first.
    const timer = setImmediate(onAbort);
    return () => clearImmediate(timer);
  }
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}
